// endured's parts wired together and served until told to stop: what endured's main runs
// once it has its settings, token, store and provider. A bench build serves the same parts
// over another provider (bench/scale).
#pragma once

#include <atomic>
#include <filesystem>
#include <string>

#include "common/result.h"
#include "controller/core/config.h"
#include "provider/host/host_registry.h"
#include "provider/node_provider.h"
#include "store/store.h"

namespace endure::controller {

// The settings of the state folder home (made if missing, with its clusters and secrets
// folders): config_file (default home/config.json; absent: the defaults) over the defaults,
// then port when not 0. A bad config file is a ValidationException naming it.
Result<Config> open_home(const std::filesystem::path& home, int port,
                         const std::filesystem::path& config_file = {});

// The operator token: made once, mode 0600, kept across restarts.
Result<std::string> load_or_create_token(const std::filesystem::path& path);

// Serves the API (and TLS for agents when configured), runs the reconcile loop, the health
// watch and the Slurm sampler until stop is set, then stops them; instances keep running.
// The access keys of signed requests are read from config.home (made at the first start).
// Returns the process's exit code.
int serve_until_stopped(const Config& config, const std::string& token, store::Store& store,
                        provider::NodeProvider& provider, provider::HostRegistry& hosts,
                        const std::atomic<bool>& stop);

}  // namespace endure::controller
