// slurm.conf and /etc/hosts for a cluster, rendered from its layout.
#pragma once

#include <string>

#include "spec/layout.h"

namespace endure::slurm {

// The whole slurm.conf. The settings resilience depends on are explained in place.
std::string render_slurm_conf(const spec::ClusterLayout& layout);

// /etc/hosts for every node: each node's name resolves to its loopback address.
std::string render_hosts(const spec::ClusterLayout& layout);

// A stable hash of a rendered file (FNV-1a, 16 hex digits), to know what was applied.
std::string content_hash(const std::string& content);


}  // namespace endure::slurm
