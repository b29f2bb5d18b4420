// comm/store_client.h — the client of tpbench's own store server (comm/store_server.h), as a
// c10d::Store, so that c10d's Gloo process group, its PrefixStore and the NCCL id exchange use
// it like any other store. One connection, one request at a time (as c10d's TCPStore client).
#pragma once

#include <torch/csrc/distributed/c10d/Store.hpp>

#include <chrono>
#include <cstdint>
#include <mutex>
#include <string>
#include <vector>

namespace tpb {

class StoreClient : public c10d::Store {
 public:
  // Connects (retrying until `timeout`: the server may start later) and proves it holds `secret`;
  // throws when the server refuses it or does not prove the same.
  StoreClient(const std::string& host, std::uint16_t port, const std::string& secret,
              std::chrono::milliseconds timeout);
  ~StoreClient() override;

  void set(const std::string& key, const std::vector<std::uint8_t>& value) override;
  std::vector<std::uint8_t> compareSet(const std::string& key, const std::vector<std::uint8_t>& expected,
                                       const std::vector<std::uint8_t>& desired) override;
  std::vector<std::uint8_t> get(const std::string& key) override;
  std::int64_t add(const std::string& key, std::int64_t value) override;
  bool deleteKey(const std::string& key) override;
  bool check(const std::vector<std::string>& keys) override;
  std::int64_t getNumKeys() override;
  void wait(const std::vector<std::string>& keys) override;
  void wait(const std::vector<std::string>& keys, const std::chrono::milliseconds& timeout) override;
  // Another client with a connection of its own. Neither 1.13's nor 2.6's c10d::Store declares
  // it (hence no `override`); releases after 2.6 ask their stores for one.
  c10::intrusive_ptr<c10d::Store> clone();

 private:
  std::vector<std::string> call(std::vector<std::string> request, std::chrono::milliseconds serverWait);
  std::string one(std::vector<std::string> request);

  std::mutex m_;
  int fd_ = -1;
  std::string host_, secret_;
  std::uint16_t port_ = 0;
};

}  // namespace tpb
