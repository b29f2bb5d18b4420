// comm/hmac_sha256.h — SHA-256 (FIPS 180-4) and HMAC-SHA256 (RFC 2104), written from the specs
// for the store's challenge-response (comm/store_server.h): small, no new library to link, and
// checked against the published test vectors (tests/store_server_test.cc).
#pragma once

#include <array>
#include <cstdint>
#include <string>

namespace tpb {

using Digest = std::array<std::uint8_t, 32>;

Digest sha256(const std::string& data);
Digest hmacSha256(const std::string& key, const std::string& message);
// Compares in time independent of where the first difference is (a MAC check must not leak it).
bool sameDigest(const Digest& a, const Digest& b);
std::string hex(const Digest& d);

}  // namespace tpb
