// Where a re-run step reads each rank's shard from: the nearest copy that verifies. The
// rank's own node's memory store first (nothing crosses the network), then the peers
// holding its replicas in placement order, then the shared disk, then S3. A copy missing,
// unreachable or failing a checksum sends the read on to the next; every rank reads the
// same step, so a fallback never mixes steps across ranks.
#pragma once

#include <functional>
#include <string>
#include <vector>

#include "common/result.h"

namespace endure::ckpt {

enum class Source { own_store, peer_store, disk, s3 };
// "own node", "peer", "disk", "s3": what the trainer's log and the recovery report say.
const char* name(Source source);

// One copy to try: its tier and where it is (a node name, a folder or an s3:// prefix).
struct Candidate {
  Source source = Source::disk;
  std::string where;
  bool operator==(const Candidate&) const = default;
};

// The copies of a rank's shard to try, nearest first: own_node's store and each of
// replica_nodes' (when the memory tier is on: own_node not empty), the shared folder (when
// not empty), the S3 prefix (when not empty).
std::vector<Candidate> restore_order(const std::string& own_node,
                                     const std::vector<std::string>& replica_nodes,
                                     const std::string& disk_dir, const std::string& s3_uri);

// A copy tried and passed over, and why.
struct Miss {
  Candidate from;
  Error error;
};

// What restore_first() read: the value, the copy it came from, and the nearer copies that
// failed on the way.
template <class T>
struct FirstGood {
  T value;
  Candidate from;
  std::vector<Miss> missed;
};

// Reads the candidates in order until one succeeds. When none does: an error listing each
// copy and why it failed (code "NoCopy").
template <class T>
Result<FirstGood<T>> restore_first(const std::vector<Candidate>& order,
                                   const std::function<Result<T>(const Candidate&)>& read) {
  std::vector<Miss> missed;
  for (const auto& candidate : order) {
    auto got = read(candidate);
    if (got) return FirstGood<T>{std::move(*got), candidate, std::move(missed)};
    missed.push_back({candidate, got.error()});
  }
  std::string why;
  for (const auto& m : missed)
    why += std::string(why.empty() ? "" : "; ") + name(m.from.source) + " " + m.from.where + ": " +
           m.error.message;
  return make_error("NoCopy", "no copy of the shard could be read" + (why.empty() ? "" : ": " + why));
}

}  // namespace endure::ckpt
