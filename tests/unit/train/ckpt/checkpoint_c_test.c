/* The checkpoint engine through its C API only: save, wait, latest, load, read back, and
 * errors as codes. Exits 0 when every check holds. */
#include <endure/checkpoint_c.h>
#include <stdio.h>
#include <stdlib.h>
#include <string.h>
#include <unistd.h>

#define CHECK(cond)                                                   \
  do {                                                                \
    if (!(cond)) {                                                    \
      fprintf(stderr, "%s:%d: check failed: %s\n", __FILE__, __LINE__, #cond); \
      return 1;                                                       \
    }                                                                 \
  } while (0)

/* Flips the bits of the byte at offset in path; 0 when done. */
static int flip_byte(const char* path, long offset) {
  FILE* f = fopen(path, "r+b");
  if (f == NULL) return -1;
  int c = fseek(f, offset, SEEK_SET) == 0 ? fgetc(f) : EOF;
  int ok = c != EOF && fseek(f, offset, SEEK_SET) == 0 && fputc(~c & 0xff, f) != EOF;
  return fclose(f) == 0 && ok ? 0 : -1;
}

/* What endure_ckpt_load_into asked choose_targets, and what it answers. */
struct targets_seen {
  endure_ckpt_target targets[2];
  size_t count;
  int refuse;
  int calls;
  int64_t step;
  char user[256];
};

static endure_ckpt_status choose_targets(void* ctx, int64_t step, const char* user_json,
                                         const endure_ckpt_target** targets, size_t* count) {
  struct targets_seen* seen = ctx;
  seen->calls++;
  seen->step = step;
  snprintf(seen->user, sizeof seen->user, "%s", user_json);
  if (seen->refuse) return ENDURE_CKPT_EINVAL;
  *targets = seen->targets;
  *count = seen->count;
  return ENDURE_CKPT_OK;
}

int main(void) {
  char dir[] = "/tmp/endure-ckpt-c-XXXXXX";
  CHECK(mkdtemp(dir) != NULL);
  endure_ckpt* c = NULL;
  CHECK(endure_ckpt_open(dir, 0, 1, 3, 0, &c) == ENDURE_CKPT_OK);
  endure_ckpt* bad = NULL;
  CHECK(endure_ckpt_open(dir, 2, 1, 3, 0, &bad) == ENDURE_CKPT_EINVAL && bad == NULL);

  float weights[1000];
  for (int i = 0; i < 1000; ++i) weights[i] = (float)i * 0.5f;
  long long counter = 42;
  endure_ckpt_buffer buffers[2] = {{"weights", weights, sizeof weights},
                                   {"counter", &counter, sizeof counter}};
  CHECK(endure_ckpt_save(c, 7, buffers, 2, "{\"lr\": 0.001}") == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_wait(c) == ENDURE_CKPT_OK);
  /* Bad input: a step not above the last one; a user text that is not a JSON object. */
  CHECK(endure_ckpt_save(c, 7, buffers, 2, NULL) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(c), "step") != NULL);
  CHECK(endure_ckpt_save(c, 8, buffers, 2, "[1,2]") == ENDURE_CKPT_EINVAL);

  int64_t step = -1;
  CHECK(endure_ckpt_latest(c, &step) == ENDURE_CKPT_OK && step == 7);
  int64_t loaded = -1;
  CHECK(endure_ckpt_load(c, -1, &loaded) == ENDURE_CKPT_OK && loaded == 7);
  const void* data = NULL;
  size_t size = 0;
  CHECK(endure_ckpt_loaded_buffer(c, "weights", &data, &size) == ENDURE_CKPT_OK);
  CHECK(size == sizeof weights && memcmp(data, weights, size) == 0);
  CHECK(endure_ckpt_loaded_buffer(c, "counter", &data, &size) == ENDURE_CKPT_OK);
  CHECK(size == sizeof counter && *(const long long*)data == 42);
  CHECK(endure_ckpt_loaded_buffer(c, "missing", &data, &size) == ENDURE_CKPT_ENOTFOUND);
  CHECK(endure_ckpt_load(c, 99, &loaded) == ENDURE_CKPT_ENOTFOUND);
  /* One byte flipped in the shard's data (past its 16-byte header): the step fails its
   * checksum when loaded by name. */
  char shard[160];
  snprintf(shard, sizeof shard, "%s/step-000000000007/rank-00000.shard", dir);
  CHECK(flip_byte(shard, 100) == 0);
  CHECK(endure_ckpt_load(c, 7, &loaded) == ENDURE_CKPT_ECORRUPT);
  CHECK(strstr(endure_ckpt_last_error(c), "checksum") != NULL);
  /* An overlapped save is the state at its call: written after wait_copied, not seen. */
  CHECK(endure_ckpt_save_overlapped(c, 9, buffers, 2, NULL) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_wait_copied(c) == ENDURE_CKPT_OK);
  counter = 43;
  CHECK(endure_ckpt_wait(c) == ENDURE_CKPT_OK);
  int64_t nine = -1;
  CHECK(endure_ckpt_load(c, 9, &nine) == ENDURE_CKPT_OK && nine == 9);
  const void* saved = NULL;
  size_t saved_size = 0;
  CHECK(endure_ckpt_loaded_buffer(c, "counter", &saved, &saved_size) == ENDURE_CKPT_OK);
  CHECK(saved_size == sizeof counter && *(const long long*)saved == 42);
  counter = 42;

  /* Restoring into the caller's own memory, the targets chosen once the step and this
   * rank's user_json are known; a refusal or a wrong size writes nothing. */
  struct targets_seen seen = {0};
  float into_weights[1000];
  long long into_counter = 0;
  memset(into_weights, 0, sizeof into_weights);
  seen.targets[0] = (endure_ckpt_target){"weights", into_weights, sizeof into_weights};
  seen.targets[1] = (endure_ckpt_target){"counter", &into_counter, sizeof into_counter};
  seen.count = 2;
  CHECK(endure_ckpt_load_into(c, -1, choose_targets, &seen, &loaded) == ENDURE_CKPT_OK);
  CHECK(loaded == 9 && seen.step == 9 && seen.calls == 1 && strcmp(seen.user, "{}") == 0);
  CHECK(memcmp(into_weights, weights, sizeof weights) == 0 && into_counter == 42);
  memset(into_weights, 0, sizeof into_weights);
  into_counter = 0;
  seen.refuse = 1;
  CHECK(endure_ckpt_load_into(c, 9, choose_targets, &seen, &loaded) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(c), "refused step 9") != NULL);
  seen.refuse = 0;
  seen.targets[1].size = 4;
  CHECK(endure_ckpt_load_into(c, 9, choose_targets, &seen, &loaded) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(c), "counter") != NULL);
  seen.count = 1; /* "counter" left out */
  CHECK(endure_ckpt_load_into(c, 9, choose_targets, &seen, &loaded) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(c), "counter") != NULL);
  CHECK(into_weights[1] == 0.0f && into_counter == 0);
  /* Step 7 (its shard damaged above) fails its checksum; its rank's user_json is its own. */
  seen.count = 2;
  seen.targets[1].size = sizeof into_counter;
  CHECK(endure_ckpt_load_into(c, 7, choose_targets, &seen, &loaded) == ENDURE_CKPT_ECORRUPT);
  CHECK(seen.step == 7 && strstr(seen.user, "\"lr\"") != NULL);
  CHECK(endure_ckpt_load_into(c, 9, NULL, NULL, &loaded) == ENDURE_CKPT_EINVAL);
  endure_ckpt_close(c);

  /* The folder turned into a regular file under an open handle (which stops root as well
   * as anyone): the background write fails, and wait() says so. */
  char gone[160];
  snprintf(gone, sizeof gone, "%s/gone", dir);
  CHECK(endure_ckpt_open(gone, 0, 1, 3, 0, &c) == ENDURE_CKPT_OK);
  CHECK(rmdir(gone) == 0);
  FILE* file = fopen(gone, "w");
  CHECK(file != NULL && fclose(file) == 0);
  CHECK(endure_ckpt_save(c, 1, buffers, 2, NULL) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_wait(c) == ENDURE_CKPT_EIO);
  CHECK(strstr(endure_ckpt_last_error(c), gone) != NULL);
  endure_ckpt_close(c);

  /* Rank 0 of two, alone: rank 1's shard never becomes durable, so after the commit timeout
   * (half a second here) the step is given up and wait() says why. */
  char two[160];
  snprintf(two, sizeof two, "%s/two", dir);
  endure_ckpt_options two_ranks = {two, NULL, NULL, 0, 2, 3, 0, 0.5, NULL, 0, NULL, NULL, 0, NULL};
  CHECK(endure_ckpt_open_with(&two_ranks, &c) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_save(c, 1, buffers, 2, NULL) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_wait(c) == ENDURE_CKPT_ETIMEOUT);
  CHECK(strstr(endure_ckpt_last_error(c), "rank 1") != NULL);
  CHECK(endure_ckpt_latest(c, &step) == ENDURE_CKPT_ENOTFOUND);
  endure_ckpt_close(c);

  /* The S3 tier: a malformed URI is refused naming the field, before any folder is made, and
   * the thread's open error says so; "" is no tier, as NULL is. */
  char s3_local[160];
  snprintf(s3_local, sizeof s3_local, "%s/s3-local", dir);
  endure_ckpt_options with_s3 = {0};
  with_s3.dir = s3_local;
  with_s3.world = 1;
  with_s3.keep_last = 2;
  const char* malformed[] = {"https://bucket/prefix", "s3://", "s3://Bucket_1/prefix"};
  for (int i = 0; i < 3; ++i) {
    with_s3.s3 = malformed[i];
    c = NULL;
    CHECK(endure_ckpt_open_with(&with_s3, &c) == ENDURE_CKPT_EINVAL && c == NULL);
    CHECK(strncmp(endure_ckpt_last_error(NULL), "s3 '", 4) == 0);
    CHECK(strstr(endure_ckpt_last_error(NULL), malformed[i]) != NULL);
    CHECK(access(s3_local, F_OK) != 0);
  }
  CHECK(strstr(endure_ckpt_last_error(NULL), "bucket name") != NULL);
  with_s3.s3 = "";
  /* disk_duty: 0 is the default; outside (0, 1] is refused naming it. */
  with_s3.disk_duty = 1.5;
  CHECK(endure_ckpt_open_with(&with_s3, &c) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(NULL), "disk_duty") != NULL);
  CHECK(access(s3_local, F_OK) != 0);
  with_s3.disk_duty = 0;
  /* The cluster memory tier: a node without the tier's files, a world its rank nodes do
   * not match, and a bad replica count are refused naming the field, nothing made. */
  char no_config[160];
  snprintf(no_config, sizeof no_config, "%s/no-config", dir);
  with_s3.cluster_node = "node-1";
  with_s3.cluster_rank_nodes = "node-1";
  with_s3.cluster_config_dir = no_config;
  CHECK(endure_ckpt_open_with(&with_s3, &c) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(NULL), "memory_store.json") != NULL);
  with_s3.cluster_rank_nodes = "node-1,node-2";
  CHECK(endure_ckpt_open_with(&with_s3, &c) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(NULL), "cluster_rank_nodes") != NULL);
  with_s3.cluster_replicas = -2;
  CHECK(endure_ckpt_open_with(&with_s3, &c) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(NULL), "cluster_replicas") != NULL);
  CHECK(access(s3_local, F_OK) != 0);
  with_s3.cluster_node = "";  /* "" is no tier, as NULL is */
  CHECK(endure_ckpt_open_with(&with_s3, &c) == ENDURE_CKPT_OK);
  CHECK(strcmp(endure_ckpt_last_error(NULL), "") == 0);
  endure_ckpt_close(c);

  /* With the node-local tiers: a second handle (a restarted process) finds the step. */
  char shared[160], local[160], memory[160];
  snprintf(shared, sizeof shared, "%s/shared", dir);
  snprintf(local, sizeof local, "%s/local", dir);
  snprintf(memory, sizeof memory, "%s/memory", dir);
  CHECK(endure_ckpt_open_tiered(shared, local, memory, 0, 1, 2, 0, &c) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_save(c, 3, buffers, 2, NULL) == ENDURE_CKPT_OK);
  endure_ckpt_close(c);
  CHECK(endure_ckpt_open_tiered(shared, local, memory, 0, 1, 2, 0, &c) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_load(c, -1, &loaded) == ENDURE_CKPT_OK && loaded == 3);
  CHECK(endure_ckpt_loaded_buffer(c, "weights", &data, &size) == ENDURE_CKPT_OK);
  CHECK(size == sizeof weights && memcmp(data, weights, size) == 0);
  /* A save to the memory tier alone, then flushed to the disk tiers. */
  CHECK(endure_ckpt_save_overlapped(c, 4, buffers, 2, NULL) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_disk_busy(c) == 1);
  CHECK(endure_ckpt_wait_copied(c) == ENDURE_CKPT_OK);
  weights[0] = 123.0f;
  CHECK(endure_ckpt_save_overlapped_memory(c, 5, buffers, 2, NULL) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_wait(c) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_disk_busy(c) == 0);
  char step5[200];
  snprintf(step5, sizeof step5, "%s/step-000000000005/MANIFEST.json", shared);
  CHECK(access(step5, F_OK) != 0);
  CHECK(endure_ckpt_flush(c) == ENDURE_CKPT_OK);
  CHECK(access(step5, F_OK) == 0);
  endure_ckpt_close(c);
  endure_ckpt* untiered = NULL;
  CHECK(endure_ckpt_open(shared, 0, 1, 2, 0, &untiered) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_save_overlapped_memory(untiered, 6, buffers, 2, NULL) == ENDURE_CKPT_EINVAL);
  CHECK(strstr(endure_ckpt_last_error(untiered), "tiers") != NULL);
  CHECK(endure_ckpt_load(untiered, -1, &loaded) == ENDURE_CKPT_OK && loaded == 5);
  CHECK(endure_ckpt_loaded_buffer(untiered, "weights", &data, &size) == ENDURE_CKPT_OK);
  CHECK(size == sizeof weights && ((const float*)data)[0] == 123.0f);
  endure_ckpt_close(untiered);

  /* A state kept in place: written into the slot handed out, saved without a copy, read
   * back; the slot of the newest step is never handed out for the next state. */
  char in_place[160];
  snprintf(in_place, sizeof in_place, "%s/in-place", dir);
  CHECK(endure_ckpt_open_tiered(in_place, NULL, memory, 0, 1, 2, 0, &c) == ENDURE_CKPT_OK);
  const char* names[2] = {"weights", "counter"};
  size_t sizes[2] = {sizeof weights, sizeof counter};
  void* slot[2] = {NULL, NULL};
  CHECK(endure_ckpt_save_in_place(c, 1, NULL, 0) == ENDURE_CKPT_EINVAL);
  CHECK(endure_ckpt_next_state(c, names, sizes, 2, slot) == ENDURE_CKPT_OK);
  memcpy(slot[0], weights, sizeof weights);
  memcpy(slot[1], &counter, sizeof counter);
  CHECK(endure_ckpt_save_in_place(c, 1, "{\"lr\": 0.5}", 0) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_save_in_place(c, 2, NULL, 0) == ENDURE_CKPT_EINVAL); /* saved already */
  void* next[2] = {NULL, NULL};
  CHECK(endure_ckpt_next_state(c, names, sizes, 2, next) == ENDURE_CKPT_OK && next[0] != slot[0]);
  ((float*)next[0])[0] = -1.0f;
  CHECK(endure_ckpt_save(c, 5, buffers, 2, NULL) == ENDURE_CKPT_EINVAL); /* not mixed */
  CHECK(endure_ckpt_flush(c) == ENDURE_CKPT_OK);
  CHECK(endure_ckpt_load(c, -1, &loaded) == ENDURE_CKPT_OK && loaded == 1);
  CHECK(endure_ckpt_loaded_buffer(c, "weights", &data, &size) == ENDURE_CKPT_OK);
  CHECK(size == sizeof weights && memcmp(data, weights, size) == 0);
  endure_ckpt_close(c);

  char cmd[128];
  snprintf(cmd, sizeof cmd, "rm -rf '%s'", dir);
  CHECK(system(cmd) == 0);
  printf("checkpoint C API: OK\n");
  return 0;
}
