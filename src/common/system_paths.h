// Where endure lives when installed as a system service (packaging/systemd/endured.service):
// endured's state and its settings, and where the CLI looks for that endured.
#pragma once

namespace endure {

inline constexpr const char* kSystemHome = "/var/lib/endure";                // endured --home
inline constexpr const char* kSystemConfigFile = "/etc/endure/config.json";  // --config

// The node software an installed endured hands to its nodes, relative to the folder of its
// own binary (bin/): the programs a node's /opt/endure/bin holds, and its /opt/endure/lib.
inline constexpr const char* kInstalledNodeBin = "../lib/endure/node/bin";
inline constexpr const char* kInstalledNodeLib = "../lib/endure/node/lib";

}  // namespace endure
