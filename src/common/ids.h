// Identifiers and secrets, from the kernel's random source.
#pragma once

#include <string>

namespace endure::ids {

// n lowercase hex digits.
std::string random_hex(int n);

// "i-" + 17 hex digits: new for every instance, never reused.
std::string new_instance_id();

// 12 hex digits, the cluster part of a ClusterArn.
std::string new_cluster_id();

// A bearer token: 48 hex digits.
std::string new_token();

// Compares two secrets in time independent of where they differ.
bool same_secret(const std::string& a, const std::string& b);

// Current time as seconds since the epoch with millisecond precision.
double now_seconds();

// ISO-8601 UTC with milliseconds, e.g. 2026-12-02T14:15:00.123Z.
std::string iso_time(double epoch_seconds);

}  // namespace endure::ids
