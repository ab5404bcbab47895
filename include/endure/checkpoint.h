// endure's checkpoint engine: sharded, asynchronous, atomic and verified checkpoints.
//
// A Checkpointer is bound to a folder (shared by every rank of a job) and to one rank of a
// world. save() returns once the caller's buffers are copied to host memory; the shard is
// written and made durable in the background. Each rank writes its own shard; rank 0
// commits the checkpoint by writing its manifest, which names every shard with its size and
// per-chunk checksums, only after every rank's shard is durable. A reader never sees a
// half-written checkpoint: without a manifest a step does not exist, and every byte it
// loads is checked against the manifest.
//
// Layout: DIR/step-<12 digits>/rank-<5 digits>.shard (16-byte header: magic "ENDCKPT\0",
// version, rank; then the buffers back to back), rank-<5 digits>.json (the shard's
// description, written once the shard is durable, with the user metadata of this rank's
// save) and MANIFEST.json (the commit).
//
// Tiers. Besides DIR (the shared file system, /fsx: every rank sees it, it outlives nodes)
// a checkpointer may keep two node-local tiers, filled first: the memory tier (a tmpfs
// folder such as /dev/shm/...; the copy save() makes is itself the memory tier's shard, in
// one of two slot folders, slot-0 and slot-1, so it outlives the process but not the node)
// and the local disk tier (a folder on the node's own disk, with DIR's layout). The bytes
// of a shard are the same in every tier, so one set of checksums checks every copy. A
// node-local tier's step is committed (its own MANIFEST.json) by the rank that completes
// it once every rank's descriptor is there, which happens only when all ranks share the
// node; ranks spread over nodes commit in DIR alone, so they always agree on the steps that
// exist. A node-local manifest records the DIR it belongs to; copies made for another DIR
// (a tier folder reused by another job) are never restored from. Restore takes the newest
// step committed in any tier and reads this rank's shard from the fastest tier whose copy
// verifies: memory, then local disk, then DIR.
//
// The S3 tier (Options::s3, s3://BUCKET/PREFIX), slowest of all, outlives the cluster: once
// a step's shard is written to the disk tiers, it is uploaded from there in the background
// (multipart, parts in parallel) as objects in DIR's layout under PREFIX, the same bytes,
// descriptors and manifest; rank 0 writes the manifest object only once every rank's shard
// object is whole. A save due while the S3 tier still uploads an earlier one replaces the
// one waiting (logged), so a slow store makes that tier fall behind, never training wait.
// Restores read it with ranged parallel GETs, every chunk verified, when no faster tier
// holds the newest step. endure ckpt ls|verify|prune take an s3:// folder too.
#pragma once

#include <cstddef>
#include <cstdint>
#include <filesystem>
#include <functional>
#include <map>
#include <memory>
#include <optional>
#include <string>
#include <vector>

#include "common/json.h"
#include "common/result.h"

namespace endure::ckpt {

// A named region of the caller's memory to save.
struct Buffer {
  std::string name;
  const void* data = nullptr;
  size_t size = 0;
};

struct Options {
  std::filesystem::path dir;
  int rank = 0;
  int world = 1;
  // Retention, applied by rank 0 after each commit: the newest keep_last steps, plus every
  // step that is a multiple of keep_every (0: none). keep_last 0 keeps everything.
  int keep_last = 3;
  int keep_every = 0;
  // Rank 0 waits this long for the other ranks' shards before it gives a step up.
  double commit_timeout_seconds = 600;
  // Checksums cover chunks of this many bytes (xxHash XXH3-64).
  size_t chunk_bytes = 4u << 20;
  // The node-local tiers (empty: none). A memory tier folder is for one job: two jobs
  // sharing one would overwrite each other's slots.
  std::filesystem::path memory_dir{};
  std::filesystem::path local_dir{};
  // The local disk tier keeps this rank's newest local_keep_last steps.
  int local_keep_last = 2;
  // The S3 tier, s3://BUCKET[/PREFIX] (empty: none), reached with the AWS environment's
  // configuration (AWS_ENDPOINT_URL, AWS_ACCESS_KEY_ID, ..., or the shared credentials
  // file). Retention there is keep_last and keep_every, as in dir.
  std::string s3{};
  // The cluster memory tier (cluster_node empty: none), on a cluster whose
  // TieredStorageConfig enables it (an endure-memstore on every node): each save's shard
  // goes to the memory store of this rank's node and of cluster_replicas peers (never this
  // node; spread over instance groups), and rank 0 commits the step there once every copy
  // is whole. A restore reads a rank's shard from the nearest copy that verifies: its
  // node's store, then its replicas', before the disk tiers; so a replaced node's ranks are
  // filled from peers. A save to it alone (Tiers::memory) leaves the disk behind, as with
  // memory_dir. A step refused for want of room, or not whole in time, is logged and left
  // to the disk tiers.
  std::string cluster_node{};                     // this rank's node, as Slurm names it
  std::vector<std::string> cluster_rank_nodes{};  // the node of every rank, by rank
  int cluster_replicas = 1;
  // Where the node's memory_store.json and resource_config.json are (empty: the node's
  // /opt/endure/config).
  std::filesystem::path cluster_config_dir{};
  // How long rank 0 waits for every rank's copies of a step in the cluster memory tier.
  double cluster_commit_timeout_seconds = 30;
  // The share of the time the disk tiers may spend writing, in (0, 1]: after a disk write
  // that took T seconds, disk_busy() stays true T x (1 / disk_duty - 1) seconds more, so a
  // caller saving every step (to the memory tier while the disk is busy) leaves the disk,
  // and the cycles and memory bandwidth its writes take, idle the rest of the time. 1: no
  // rest, every save the disk keeps up with is written to it.
  double disk_duty = 1;
};

// Where a save goes: every tier, or the memory tiers alone (memory_dir's and the cluster's:
// while the disk tiers are still writing an earlier save, a trainer saving every step keeps
// the newest step in memory and lets the disk fall behind instead of queueing behind it).
enum class Tiers { all, memory };

// A named region of the caller's memory to restore into.
struct MutableBuffer {
  std::string name;
  void* data = nullptr;
  size_t size = 0;
};

// The name and size of one buffer of a state the checkpointer holds (next_state()).
struct BufferShape {
  std::string name;
  size_t size = 0;
};

// What a checkpoint on disk is.
struct CheckpointInfo {
  int64_t step = 0;
  int world = 0;
  uint64_t bytes = 0;      // every shard together
  json user;               // the metadata given to save()
  bool committed = false;  // a manifest exists
  bool valid = false;      // committed, and the manifest and shard sizes check out
  std::string reason;      // why not valid
  std::filesystem::path path;
  // The tiers holding a committed, valid copy, fastest first ("memory", "cluster", "local",
  // "shared", "s3"); after a restore, the one tier it was read from ("cluster" with the
  // copy it was read from: "cluster own node node-2", "cluster peer node-3").
  std::vector<std::string> tiers;
  std::vector<std::filesystem::path> tier_paths;  // the folder of each of those copies
  uint64_t bytes_read = 0;  // after a restore: what it moved (this rank's shard)
};

// One rank's buffers of a checkpoint, read back and verified.
struct Loaded {
  int64_t step = 0;
  int world = 0;
  json user;
  std::map<std::string, std::vector<uint8_t>> buffers;
};

class Checkpointer {
 public:
  // REQUIRES: 0 <= rank < world; dir creatable. Creates dir.
  static Result<std::unique_ptr<Checkpointer>> open(const Options& options);
  ~Checkpointer();  // waits for a save in flight, not for a cluster memory tier's commit

  // Copies the buffers into one of two staging slots (the memory tier's, when it has one)
  // and returns; the shard is persisted to each tier (and, on rank 0, committed) in the
  // background. Double-buffered: only a save two saves back still being written is waited
  // for. Fails at once on bad input (no buffers, duplicate or empty names, a step not above
  // the last saved one, Tiers::memory without a memory tier) and changes nothing then.
  Status save(int64_t step, const std::vector<Buffer>& buffers, const json& user = json::object(),
              Tiers tiers = Tiers::all);

  // As save(), but the copy runs on a thread of its own and this returns at once: the
  // caller goes on computing the next step, reading the buffers but not writing them,
  // until wait_copied(). The checkpoint is the buffers as they were at this call. The
  // copy runs at idle priority, on cycles the caller leaves unused, and takes each chunk's
  // checksum as it goes. Only one copy runs at a time: a save() or save_overlapped()
  // first waits for the last one.
  Status save_overlapped(int64_t step, const std::vector<Buffer>& buffers,
                         const json& user = json::object(), Tiers tiers = Tiers::all);

  // Returns once the last save_overlapped()'s copy is done, copying what is left of it on
  // this thread: the buffers may change after. Returns at once when none is running.
  void wait_copied();

  // A state kept in place, for a caller that can write each step's state into memory of
  // the checkpointer's (an optimizer updating out of place): a save then copies nothing.
  // next_state() hands out the buffers, laid out as a shard in the order given, of a slot
  // free for the next state; the caller writes its state there (reading the state it had,
  // which the last call handed out), after which that slot holds its state, and
  // save_in_place() makes it checkpoint `step`: its checksums taken on `threads` threads
  // (0: one per core), the memory tier's copy committed (the slot is its shard), and the
  // disk tiers written in the background. Three slots take turns (the memory tier's
  // slot-0..2 folders, or anonymous memory without a memory tier): the one holding the
  // state, the one the last save to every tier is read from, and the one handed out. Their
  // choice depends only on the sequence of calls, so ranks sharing a memory tier agree.
  // The slot handed out stops being a checkpoint in the memory tier first, and waits only
  // for a disk write of a save before the last to every tier. Not to be mixed with save()
  // and save_overlapped(); bad input fails at once and changes nothing.
  Result<std::vector<MutableBuffer>> next_state(const std::vector<BufferShape>& shapes);
  Status save_in_place(int64_t step, const json& user = json::object(), Tiers tiers = Tiers::all,
                       unsigned threads = 0);
  // Optional, while the caller writes the state into the slot handed out: bytes [data, data
  // + bytes) of it are final, written by the caller's thread number `thread`, and `copy`
  // (when given) holds the same bytes in cache. A checksum chunk that one thread reports
  // from its start to its end in order is hashed then, instead of read again from memory by
  // save_in_place(). Safe from many threads at once; not with next_state() or
  // save_in_place().
  void state_written(int thread, const void* data, size_t bytes, const void* copy = nullptr);

  // Whether a save's disk tiers (local disk, shared folder) are still to be written (a
  // save to every tier now would wait behind it or queue), or rest after the last write
  // (Options::disk_duty). Ranks must agree on a save's tiers (rank 0 commits only steps
  // every rank wrote): a trainer reduces this over them.
  bool disk_busy() const;

  // Sizes both staging slots for saves of `bytes` (the buffers together) in the background,
  // their pages touched, so that even the first save() stalls only for its copy. Optional;
  // a save of another size resizes its slot itself.
  void reserve(size_t bytes);

  // Writes the newest save to the disk tiers when it went to the memory tier alone, then
  // wait()s: what a run ends with, so that its last step outlives the node. When this
  // checkpointer saved nothing (a run resumed at its last step), the newest valid step in
  // any tier is copied to the shared folder if only node-local tiers hold it; every rank
  // flushes alike.
  Status flush();

  // Blocks until every save is durable in every tier (and, on rank 0, committed), the S3
  // tier's uploads included; the outcome of the first that failed since the last wait(),
  // else success.
  Status wait();

  // Every step in any tier, newest first, each checked cheaply (manifest, shard sizes).
  std::vector<CheckpointInfo> list() const;
  // The newest committed and valid checkpoint.
  std::optional<CheckpointInfo> latest() const;

  // This rank's buffers of `step`, every chunk verified. With step < 0: the newest
  // checkpoint that verifies; a damaged or incomplete one is skipped with a logged reason.
  Result<Loaded> load(int64_t step = -1) const;

  // Another rank's buffers, as load() reads this rank's: what a restore onto another world
  // size reads to reshard.
  Result<Loaded> load_rank(int64_t step, int rank) const;

  // Restores this rank's buffers of `step` (the newest that verifies when step < 0)
  // straight into the caller's memory, verifying every chunk on the way: no copy, no
  // allocation. Every saved buffer must be given, by name, with its saved size. On an
  // error the caller's memory may hold part of the checkpoint.
  Result<CheckpointInfo> load_into(int64_t step, const std::vector<MutableBuffer>& buffers) const;

  // As load_into(), with the buffers chosen for each copy about to be read: `targets` is
  // called with its step and this rank's own `user` of that step's save (each rank's shard
  // description keeps the metadata it saved with; {} for a step saved without), before any
  // of the caller's memory is written, and returns where the buffers go or an error. A
  // "ValidationException" ends the restore then, nothing written; any other error skips
  // that copy as a damaged one is skipped.
  using TargetsFor =
      std::function<Result<std::vector<MutableBuffer>>(int64_t step, const json& user)>;
  Result<CheckpointInfo> load_into(int64_t step, const TargetsFor& targets) const;

  const Options& options() const { return options_; }

 private:
  explicit Checkpointer(Options options);
  void invalidate_memory_copy(int slot);
  Status prepare_slot(int slot, size_t bytes);
  // Tiers::memory needs a memory tier.
  Status check_tiers(Tiers tiers) const;
  // save()'s parts: checks the request and claims a staging slot sized for it (returns
  // the slot).
  Result<int> begin_save(int64_t step, const std::vector<Buffer>& buffers, Tiers tiers);
  // Hands a copied slot to the worker for the tiers left to write (its checksums when
  // taken already), or frees it when none is.
  void queue_save(int64_t step, int slot, const json& user, const json& layout,
                  std::vector<std::string> checksums, bool memory, bool disk, bool cluster);
  void join_copier();
  // Until every queued save is written (wait() without the commits and the S3 uploads);
  // the first failure since the last wait.
  Status wait_saved();
  struct Impl;
  Options options_;
  std::unique_ptr<Impl> impl_;
};

// Checks one checkpoint folder completely: the manifest, then every chunk of every shard.
// An s3://BUCKET/PREFIX/step-<12 digits> path is checked in the store.
Status verify_checkpoint(const std::filesystem::path& step_dir);

// Applies retention to a folder (what rank 0 does after each commit), or to an s3:// prefix.
Status prune(const std::filesystem::path& dir, int keep_last, int keep_every);

// Every step under an s3:// prefix, newest first, as list() gives a folder's: those without
// a manifest as not committed.
Result<std::vector<CheckpointInfo>> list_s3(const std::string& uri);

}  // namespace endure::ckpt
