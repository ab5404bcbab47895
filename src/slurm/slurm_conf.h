// slurm.conf and /etc/hosts for a cluster, rendered from its layout.
#pragma once

#include <string>

#include "spec/layout.h"

namespace endure::slurm {

// The whole slurm.conf. The settings resilience depends on are explained in place.
std::string render_slurm_conf(const spec::ClusterLayout& layout);

// /etc/hosts for every node: each node's name resolves to its loopback address.
std::string render_hosts(const spec::ClusterLayout& layout);

// /etc/slurm/cli_filter.lua (CliFilterPlugins=cli_filter/lua): batch jobs and allocations
// default to --no-kill, so that a failed node shrinks a job instead of ending it.
std::string render_cli_filter();

// A stable hash of a rendered file (FNV-1a, 16 hex digits), to know what was applied.
std::string content_hash(const std::string& content);


}  // namespace endure::slurm
