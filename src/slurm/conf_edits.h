// A person's edits to the slurm.conf endured writes: every file endured writes ends with a
// seal (a digest of everything above it), so an edit made by hand on a node is found
// without remembering what was written; and the partitions such an edit added can be kept
// when endured writes the file again (Orchestrator.Slurm.SlurmConfigStrategy Merge).
#pragma once

#include <string>
#include <vector>

namespace endure::slurm {

// body with its seal line appended. body ends with a newline.
std::string seal(const std::string& body);

// Whether text is a sealed file whose seal still matches: false for a file edited by hand
// (or one that was never endured's).
bool seal_intact(const std::string& text);

// The names of the partitions a conf declares (its PartitionName= lines), in file order.
std::vector<std::string> partition_names(const std::string& conf);

// The PartitionName= lines of edited that declare a partition ours does not (a partition a
// person added), in file order; DEFAULT lines are Slurm's defaults, never a partition.
std::vector<std::string> added_partition_lines(const std::string& ours, const std::string& edited);

// ours (a sealed file) with extra lines placed after its own, sealed again.
std::string with_lines(const std::string& ours, const std::vector<std::string>& extra);

}  // namespace endure::slurm
