/* The checkpoint engine's C API (see checkpoint.h for what it promises): stable opaque
 * handles and error codes, for callers in any language. Every call returns a status; on
 * an error, endure_ckpt_last_error() says what went wrong, naming the field or file. */
#ifndef ENDURE_CHECKPOINT_C_H
#define ENDURE_CHECKPOINT_C_H

#include <stddef.h>
#include <stdint.h>

#ifdef __cplusplus
extern "C" {
#endif

typedef struct endure_ckpt endure_ckpt;

typedef enum {
  ENDURE_CKPT_OK = 0,
  ENDURE_CKPT_EINVAL = 1,    /* bad argument: nothing was changed */
  ENDURE_CKPT_EIO = 2,       /* the file system failed */
  ENDURE_CKPT_ENOTFOUND = 3, /* no such checkpoint, or no such buffer */
  ENDURE_CKPT_ECORRUPT = 4,  /* a checksum, size or manifest did not check out */
  ENDURE_CKPT_ETIMEOUT = 5,  /* another rank's shard did not become durable in time */
  ENDURE_CKPT_EOTHER = 6
} endure_ckpt_status;

typedef struct {
  const char* name;
  const void* data;
  size_t size;
} endure_ckpt_buffer;

/* Opens a checkpointer on dir for rank of world; keep_last/keep_every as in Options. */
endure_ckpt_status endure_ckpt_open(const char* dir, int rank, int world, int keep_last,
                                    int keep_every, endure_ckpt** out);
/* The same with the node-local tiers (see checkpoint.h): a local disk folder and a memory
 * tier folder on a tmpfs such as /dev/shm; either may be NULL (no such tier). */
endure_ckpt_status endure_ckpt_open_tiered(const char* dir, const char* local_dir,
                                           const char* memory_dir, int rank, int world,
                                           int keep_last, int keep_every, endure_ckpt** out);
/* Every setting of endure_ckpt_open_tiered, rank 0's commit timeout: how long it waits
 * for the other ranks' shards before it gives a step up (its wait() then returns
 * ENDURE_CKPT_ETIMEOUT), and the S3 tier. New fields are appended, each meaning "none" or
 * "the default" at zero, so an initialiser written for fewer fields still compiles and
 * means what it did (zero-initialise: endure_ckpt_options o = {0};); a program compiled
 * against an older header is to be compiled again, as the struct grew. */
typedef struct {
  const char* dir;
  const char* local_dir;  /* NULL: no such tier */
  const char* memory_dir; /* NULL: no such tier */
  int rank;
  int world;
  int keep_last;
  int keep_every;
  double commit_timeout_seconds; /* <= 0: the default, 600 s */
  /* The S3 tier, s3://BUCKET[/PREFIX] (NULL or "": no such tier), slowest of all: shards are
   * uploaded there in the background after the disk tiers have them (see checkpoint.h). It
   * is reached with the AWS environment's configuration (AWS_ENDPOINT_URL, AWS_REGION,
   * AWS_ACCESS_KEY_ID and AWS_SECRET_ACCESS_KEY, or a profile of the shared credentials
   * file). A malformed URI, or no configuration found, is ENDURE_CKPT_EINVAL with an error
   * naming "s3", before any folder is made. */
  const char* s3;
  /* The share of the time the disk tiers may spend writing, in (0, 1] (0: 1, no rest):
   * after a disk write of T seconds, endure_ckpt_disk_busy says 1 for T x (1 / disk_duty -
   * 1) seconds more (Options::disk_duty in checkpoint.h). Outside [0, 1]: ENDURE_CKPT_EINVAL
   * naming "disk_duty". */
  double disk_duty;
  /* The cluster memory tier (checkpoint.h, Options::cluster_node), on a cluster whose
   * TieredStorageConfig enables it: this rank's node as Slurm names it (NULL or "": no such
   * tier), and every rank's node, comma-separated, by rank ("node-1,node-1,node-2,node-2").
   * cluster_replicas: the peers holding a copy of each shard (0: the default, 1; -1: none,
   * this node's store alone). cluster_config_dir: where memory_store.json and
   * resource_config.json are (NULL: the node's /opt/endure/config). A bad value, or a node
   * without the tier's files, is ENDURE_CKPT_EINVAL naming the field, before any folder is
   * made. The memory-only saves go to it too. */
  const char* cluster_node;
  const char* cluster_rank_nodes;
  int cluster_replicas;
  const char* cluster_config_dir;
} endure_ckpt_options;
endure_ckpt_status endure_ckpt_open_with(const endure_ckpt_options* options, endure_ckpt** out);
/* Waits for a save in flight and frees the handle (a step's commit in the cluster memory
 * tier is endure_ckpt_wait()'s: a closing rank does not wait for peers' copies). NULL is
 * allowed. */
void endure_ckpt_close(endure_ckpt* c);

/* Copies the buffers and returns; persists in the background. user_json may be NULL. */
endure_ckpt_status endure_ckpt_save(endure_ckpt* c, int64_t step, const endure_ckpt_buffer* buffers,
                                    size_t count, const char* user_json);
/* As endure_ckpt_save, but the copy runs on a thread of its own and this returns at once:
 * the caller may read its buffers, not write them, until endure_ckpt_wait_copied. The
 * checkpoint is the buffers as they were at this call. */
endure_ckpt_status endure_ckpt_save_overlapped(endure_ckpt* c, int64_t step,
                                               const endure_ckpt_buffer* buffers, size_t count,
                                               const char* user_json);
/* Until the last overlapped save's copy is done: the buffers may change after. */
endure_ckpt_status endure_ckpt_wait_copied(endure_ckpt* c);
/* As endure_ckpt_save_overlapped, to the memory tiers alone (ENDURE_CKPT_EINVAL without
 * one): what a caller saving every step does while endure_ckpt_disk_busy says 1 on any
 * rank, so that the disk falls behind instead of training waiting for it. */
endure_ckpt_status endure_ckpt_save_overlapped_memory(endure_ckpt* c, int64_t step,
                                                      const endure_ckpt_buffer* buffers, size_t count,
                                                      const char* user_json);
/* A state kept in place, so that a save copies nothing (Checkpointer::next_state() in
 * checkpoint.h): hands out the count buffers named names[i], sizes[i] bytes each, of a slot
 * free for the caller's next state, writing where each is to data[i]. The caller writes its
 * next state there (reading the state the last call handed out); that slot then holds its
 * state. Not to be mixed with the saves above on one handle. */
endure_ckpt_status endure_ckpt_next_state(endure_ckpt* c, const char* const* names,
                                          const size_t* sizes, size_t count, void** data);
/* The state the last endure_ckpt_next_state handed out is checkpoint `step`: its checksums
 * taken, the memory tier's copy committed, the disk tiers written in the background
 * (memory_only 1: the memory tier alone, as endure_ckpt_save_overlapped_memory). */
endure_ckpt_status endure_ckpt_save_in_place(endure_ckpt* c, int64_t step, const char* user_json,
                                             int memory_only);
/* 1 while a save's disk tiers (local disk, shared folder) are still to be written or rest
 * after their last write (disk_duty), else 0 (and 0 for NULL). */
int endure_ckpt_disk_busy(const endure_ckpt* c);
/* Writes the newest save to the disk tiers when it went to the memory tier alone, then
 * waits as endure_ckpt_wait: what a run ends with. When this handle saved nothing, the
 * newest valid step only node-local tiers hold is copied to the shared folder. */
endure_ckpt_status endure_ckpt_flush(endure_ckpt* c);
/* Until the last save is durable (and committed on rank 0). */
endure_ckpt_status endure_ckpt_wait(endure_ckpt* c);
/* The newest complete, valid step; ENDURE_CKPT_ENOTFOUND when there is none. */
endure_ckpt_status endure_ckpt_latest(endure_ckpt* c, int64_t* step);

/* Loads this rank's buffers of step (the newest valid one when step < 0), verified; they
 * stay readable through endure_ckpt_loaded_buffer until the next load or close. */
endure_ckpt_status endure_ckpt_load(endure_ckpt* c, int64_t step, int64_t* loaded_step);
endure_ckpt_status endure_ckpt_loaded_buffer(endure_ckpt* c, const char* name, const void** data,
                                             size_t* size);

/* A region of the caller's memory that a load fills. */
typedef struct {
  const char* name;
  void* data;
  size_t size;
} endure_ckpt_target;

/* Where a load's buffers go, chosen for each copy it is about to read: called on the
 * loading thread with that copy's step and this rank's user_json of its save ("{}" for a
 * step saved without one), before any of the caller's memory is written. It sets *targets
 * and *count (the regions stay valid until the load returns) and returns ENDURE_CKPT_OK, or
 * refuses the step with any other status. */
typedef endure_ckpt_status (*endure_ckpt_targets_fn)(void* ctx, int64_t step, const char* user_json,
                                                     const endure_ckpt_target** targets,
                                                     size_t* count);
/* Restores this rank's buffers of step (the newest valid one when step < 0) straight into
 * the caller's memory, from the fastest tier whose copy verifies, every chunk checked as it
 * lands, with no memory allocated for the data: what a caller that must check a step's
 * contents before its own memory is written uses. Every buffer the step holds must be among
 * the targets, by name, with its saved size; a target the step does not hold is left as it
 * is. ENDURE_CKPT_EINVAL, nothing written, when the targets are refused (by targets_for,
 * or naming the buffer that is missing or of another size); on another error the targets
 * may hold part of the checkpoint. */
endure_ckpt_status endure_ckpt_load_into(endure_ckpt* c, int64_t step,
                                         endure_ckpt_targets_fn targets_for, void* ctx,
                                         int64_t* loaded_step);

/* The last error's text for this handle ("" when none); valid until the next call. With
 * NULL: why this thread's last endure_ckpt_open* failed ("" when it succeeded), as a
 * failed open gives no handle. */
const char* endure_ckpt_last_error(const endure_ckpt* c);

#ifdef __cplusplus
}
#endif

#endif /* ENDURE_CHECKPOINT_C_H */
