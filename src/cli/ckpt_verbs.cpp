// endure ckpt ls|verify|prune DIR: the checkpoint engine's folder (or its S3 tier, an
// s3://BUCKET/PREFIX, reached with the AWS environment's configuration), read and tidied
// offline.
#include <cstdio>
#include <memory>
#include <string>

#include <fmt/format.h>

#include "cli/verbs.h"
#include "endure/checkpoint.h"

namespace endure::cli {
namespace {

std::string state_of(const ckpt::CheckpointInfo& info) {
  if (info.valid) return "complete";
  return (info.committed ? "damaged: " : "incomplete: ") + info.reason;
}

// The folders of a job's checkpoints: DIR, and the node-local tiers when given.
struct Folders {
  std::string dir, local, memory;
};

Result<std::unique_ptr<ckpt::Checkpointer>> reader(const Folders& f) {
  for (const auto& [flag, path] : {std::pair{"DIR", f.dir}, {"--local", f.local}, {"--memory", f.memory}}) {
    if (!path.empty() && !std::filesystem::is_directory(path)) {
      return make_error("NotFound", std::string(flag) + ": " + path + " is not a folder");
    }
  }
  ckpt::Options o;
  o.dir = f.dir;
  o.local_dir = f.local;
  o.memory_dir = f.memory;
  return ckpt::Checkpointer::open(o);
}

bool is_s3(const std::string& dir) { return dir.rfind("s3://", 0) == 0; }

// A DIR or flag that is wrong is a usage error; a store that fails to answer is not.
int exit_code(const Error& error) {
  const bool usage = error.code == "ValidationException" || error.code == "NotFound";
  return usage ? kExitUsage : kExitFailed;
}

// Every step of the folders, newest first; an s3:// DIR is read alone (node-local tiers
// belong to a folder on a file system).
Result<std::vector<ckpt::CheckpointInfo>> steps_of(const Folders& f) {
  if (is_s3(f.dir)) {
    if (!f.local.empty() || !f.memory.empty()) {
      return make_error("ValidationException",
                        "--local/--memory: tiers of a folder, not of an s3:// DIR");
    }
    return ckpt::list_s3(f.dir);
  }
  auto c = reader(f);
  if (!c) return c.error();
  return (*c)->list();
}

void add_folders(CLI::App* verb, Folders& f) {
  verb->add_option("DIR", f.dir, "the checkpoint folder (the shared tier), or s3://BUCKET/PREFIX")
      ->required();
  verb->add_option("--local", f.local, "the node-local disk tier's folder");
  verb->add_option("--memory", f.memory, "the memory tier's folder (on a tmpfs)");
}

std::string join(const std::vector<std::string>& v) {
  std::string out;
  for (const auto& s : v) out += (out.empty() ? "" : ",") + s;
  return out.empty() ? "-" : out;
}

}  // namespace

void add_ckpt(CLI::App& app, std::function<int()>* selected) {
  CLI::App* ckpt = app.add_subcommand("ckpt", "Checkpoint folders: list, verify, apply retention");
  ckpt->require_subcommand(1);
  auto dir = std::make_shared<Folders>();

  CLI::App* ls = ckpt->add_subcommand("ls", "List checkpoints: step, size, tier, state");
  add_folders(ls, *dir);
  ls->callback([selected, dir] {
    *selected = [dir] {
      auto steps = steps_of(*dir);
      if (!steps) {
        std::fprintf(stderr, "endure: error: %s\n", steps.error().message.c_str());
        return exit_code(steps.error());
      }
      std::printf("%-12s %-12s %-5s %-20s %s\n", "STEP", "BYTES", "WORLD", "TIERS", "STATE");
      for (const auto& info : *steps) {
        std::printf("%-12lld %-12llu %-5d %-20s %s\n", static_cast<long long>(info.step),
                    static_cast<unsigned long long>(info.bytes), info.world, join(info.tiers).c_str(),
                    state_of(info).c_str());
      }
      return kExitOk;
    };
  });

  CLI::App* verify = ckpt->add_subcommand("verify", "Check every checksum of every checkpoint");
  add_folders(verify, *dir);
  verify->callback([selected, dir] {
    *selected = [dir] {
      auto steps = steps_of(*dir);
      if (!steps) {
        std::fprintf(stderr, "endure: error: %s\n", steps.error().message.c_str());
        return exit_code(steps.error());
      }
      int damaged = 0;
      for (const auto& info : *steps) {
        if (!info.committed) {
          std::printf("step %lld: incomplete (%s)\n", static_cast<long long>(info.step),
                      info.reason.c_str());
          continue;
        }
        if (!info.valid) {
          std::printf("step %lld: DAMAGED: %s\n", static_cast<long long>(info.step), info.reason.c_str());
          ++damaged;
          continue;
        }
        for (size_t t = 0; t < info.tiers.size(); ++t) {
          auto s = ckpt::verify_checkpoint(info.tier_paths[t]);
          std::printf("step %lld (%s): %s\n", static_cast<long long>(info.step), info.tiers[t].c_str(),
                      s ? "OK" : ("DAMAGED: " + s.error().message).c_str());
          damaged += !s;
        }
      }
      return damaged ? kExitFailed : kExitOk;
    };
  });

  CLI::App* prune = ckpt->add_subcommand("prune", "Apply retention (keeps every step when both are 0)");
  prune->add_option("DIR", dir->dir, "the checkpoint folder (the shared tier), or s3://BUCKET/PREFIX")
      ->required();
  auto keep_last = std::make_shared<int>(3);
  auto keep_every = std::make_shared<int>(0);
  prune->add_option("--keep-last", *keep_last, "the newest K complete checkpoints (default 3)")
      ->check(CLI::NonNegativeNumber);
  prune->add_option("--keep-every", *keep_every, "also every step that is a multiple of M")
      ->check(CLI::NonNegativeNumber);
  prune->callback([selected, dir, keep_last, keep_every] {
    *selected = [dir, keep_last, keep_every] {
      if (auto steps = steps_of(*dir); !steps) {
        std::fprintf(stderr, "endure: error: %s\n", steps.error().message.c_str());
        return exit_code(steps.error());
      }
      if (auto s = ckpt::prune(dir->dir, *keep_last, *keep_every); !s) {
        std::fprintf(stderr, "endure: error: %s\n", s.error().message.c_str());
        return kExitFailed;
      }
      auto steps = steps_of(*dir);
      if (!steps) {
        std::fprintf(stderr, "endure: error: %s\n", steps.error().message.c_str());
        return kExitFailed;
      }
      for (const auto& info : *steps) {
        std::printf("kept step %lld (%s)\n", static_cast<long long>(info.step), state_of(info).c_str());
      }
      return kExitOk;
    };
  });
}

}  // namespace endure::cli
