// Local boot: the first thing endure-agent does as pid 1 of a local instance's fresh
// namespaces. It gives the node its hostname, its own private folders, /fsx, /local and
// its own /proc, and writes its host pid for the provider.
#pragma once

#include <string>

#include "common/result.h"

namespace endure::agent {

Status local_boot(const std::string& boot_json_path);

}  // namespace endure::agent
