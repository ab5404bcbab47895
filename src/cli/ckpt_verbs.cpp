// endure ckpt ls|verify|prune DIR: the checkpoint engine's folder, read and tidied offline.
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

Result<std::unique_ptr<ckpt::Checkpointer>> reader(const std::string& dir) {
  if (!std::filesystem::is_directory(dir)) {
    return make_error("NotFound", "DIR: " + dir + " is not a folder");
  }
  ckpt::Options o;
  o.dir = dir;
  return ckpt::Checkpointer::open(o);
}

}  // namespace

void add_ckpt(CLI::App& app, std::function<int()>* selected) {
  CLI::App* ckpt = app.add_subcommand("ckpt", "Checkpoint folders: list, verify, apply retention");
  ckpt->require_subcommand(1);
  auto dir = std::make_shared<std::string>();

  CLI::App* ls = ckpt->add_subcommand("ls", "List checkpoints: step, size, tier, state");
  ls->add_option("DIR", *dir, "the checkpoint folder")->required();
  ls->callback([selected, dir] {
    *selected = [dir] {
      auto c = reader(*dir);
      if (!c) {
        std::fprintf(stderr, "endure: error: %s\n", c.error().message.c_str());
        return kExitUsage;
      }
      std::printf("%-12s %-12s %-5s %-6s %s\n", "STEP", "BYTES", "WORLD", "TIER", "STATE");
      for (const auto& info : (*c)->list()) {
        std::printf("%-12lld %-12llu %-5d %-6s %s\n", static_cast<long long>(info.step),
                    static_cast<unsigned long long>(info.bytes), info.world, "disk",
                    state_of(info).c_str());
      }
      return kExitOk;
    };
  });

  CLI::App* verify = ckpt->add_subcommand("verify", "Check every checksum of every checkpoint");
  verify->add_option("DIR", *dir, "the checkpoint folder")->required();
  verify->callback([selected, dir] {
    *selected = [dir] {
      auto c = reader(*dir);
      if (!c) {
        std::fprintf(stderr, "endure: error: %s\n", c.error().message.c_str());
        return kExitUsage;
      }
      int damaged = 0;
      for (const auto& info : (*c)->list()) {
        if (!info.committed) {
          std::printf("step %lld: incomplete (%s)\n", static_cast<long long>(info.step),
                      info.reason.c_str());
          continue;
        }
        auto s = ckpt::verify_checkpoint(info.path);
        std::printf("step %lld: %s\n", static_cast<long long>(info.step),
                    s ? "OK" : ("DAMAGED: " + s.error().message).c_str());
        damaged += !s;
      }
      return damaged ? kExitFailed : kExitOk;
    };
  });

  CLI::App* prune = ckpt->add_subcommand("prune", "Apply retention (keeps every step when both are 0)");
  prune->add_option("DIR", *dir, "the checkpoint folder")->required();
  auto keep_last = std::make_shared<int>(3);
  auto keep_every = std::make_shared<int>(0);
  prune->add_option("--keep-last", *keep_last, "the newest K complete checkpoints (default 3)")
      ->check(CLI::NonNegativeNumber);
  prune->add_option("--keep-every", *keep_every, "also every step that is a multiple of M")
      ->check(CLI::NonNegativeNumber);
  prune->callback([selected, dir, keep_last, keep_every] {
    *selected = [dir, keep_last, keep_every] {
      auto c = reader(*dir);
      if (!c) {
        std::fprintf(stderr, "endure: error: %s\n", c.error().message.c_str());
        return kExitUsage;
      }
      if (auto s = ckpt::prune(*dir, *keep_last, *keep_every); !s) {
        std::fprintf(stderr, "endure: error: %s\n", s.error().message.c_str());
        return kExitFailed;
      }
      for (const auto& info : (*c)->list()) {
        std::printf("kept step %lld (%s)\n", static_cast<long long>(info.step), state_of(info).c_str());
      }
      return kExitOk;
    };
  });
}

}  // namespace endure::cli
