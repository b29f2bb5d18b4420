// comm/net_iface.h — which of this host's addresses a rank binds its sockets to.
//
// A rank's Gloo pairs (and c10d's Gloo process groups) listen on one local address that every
// other rank must reach. By default that is the address of the interface this host uses to reach
// MASTER_ADDR, found the way c10d does it: a UDP socket connected to the master (nothing is sent;
// the kernel picks the local end from its routes) tells its own address. On one node MASTER_ADDR
// is 127.0.0.1, so the ranks stay on loopback. GLOO_SOCKET_IFNAME (Gloo's and PyTorch's variable)
// names an interface instead; `tpbench run|sweep --iface NAME` sets it for the ranks it starts.
#pragma once

#include <string>

namespace tpb {

struct LocalAddress {
  std::string iface;    // interface name ("" when no interface holds the address)
  std::string address;  // numeric, e.g. "10.0.0.2" or "::1"
};

// The interface and address this host uses to reach `masterAddr` (a name or a numeric address).
// Throws UsageError naming `flag` when the name does not resolve or no route leads there.
LocalAddress routeTo(const std::string& masterAddr, const std::string& flag = "--master_addr");

// The address of interface `name`: its first IPv4 address, else its first IPv6 one. Throws
// UsageError naming `flag` (a flag or a variable) when there is no such interface, it is down, or
// it has no address; the message lists the interfaces there are.
LocalAddress interfaceAddress(const std::string& name, const std::string& flag);

// The address a rank of this host binds to: interface `iface` when not empty, else
// GLOO_SOCKET_IFNAME's when set, else routeTo(masterAddr).
LocalAddress bindAddress(const std::string& masterAddr, const std::string& iface = "");

// gethostname(), or "unknown".
std::string thisHostName();

}  // namespace tpb
