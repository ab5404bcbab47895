#include "common/ids.h"

#include <sys/random.h>

#include <chrono>
#include <cstdio>
#include <ctime>

namespace endure::ids {

std::string random_hex(int n) {
  static const char* digits = "0123456789abcdef";
  std::string out;
  unsigned char buf[64];
  while (static_cast<int>(out.size()) < n) {
    ssize_t got = getrandom(buf, sizeof buf, 0);
    for (ssize_t i = 0; i < got && static_cast<int>(out.size()) < n; ++i) {
      out.push_back(digits[buf[i] & 0xf]);
    }
  }
  return out;
}

std::string new_instance_id() { return "i-" + random_hex(17); }
std::string new_cluster_id() { return random_hex(12); }
std::string new_token() { return random_hex(48); }

double now_seconds() {
  using namespace std::chrono;
  return duration_cast<milliseconds>(system_clock::now().time_since_epoch()).count() / 1000.0;
}

std::string iso_time(double epoch_seconds) {
  auto whole = static_cast<time_t>(epoch_seconds);
  int millis = static_cast<int>((epoch_seconds - static_cast<double>(whole)) * 1000.0 + 0.5);
  if (millis >= 1000) {
    whole += 1;
    millis -= 1000;
  }
  std::tm tm{};
  gmtime_r(&whole, &tm);
  char out[64];
  std::snprintf(out, sizeof out, "%04d-%02d-%02dT%02d:%02d:%02d.%03dZ", tm.tm_year + 1900,
                tm.tm_mon + 1, tm.tm_mday, tm.tm_hour, tm.tm_min, tm.tm_sec, millis);
  return out;
}

bool same_secret(const std::string& a, const std::string& b) {
  if (a.size() != b.size()) return false;
  unsigned char diff = 0;
  for (size_t i = 0; i < a.size(); ++i) diff |= static_cast<unsigned char>(a[i] ^ b[i]);
  return diff == 0;
}

}  // namespace endure::ids
