#include "slurm/slurm_conf.h"

#include <fmt/format.h>

#include <cstdint>

#include "slurm/conf_edits.h"

namespace endure::slurm {

std::string render_slurm_conf(const spec::ClusterLayout& layout) {
  std::string out;
  auto line = [&](const std::string& text) { out += text + "\n"; };
  line("# slurm.conf of cluster " + layout.cluster_name + ", rendered by endured.");
  line("# endured rewrites it whenever the cluster's nodes change; what it does with an edit");
  line("# made here is the cluster's Orchestrator.Slurm.SlurmConfigStrategy.");
  line("ClusterName=" + layout.cluster_name);
  // slurmctld knows itself by its machine's hostname (a host's own name on a host).
  line(fmt::format("SlurmctldHost={}({})", layout.controller_hostname, layout.controller_address));
  line(fmt::format("SlurmctldPort={}", layout.slurmctld_port));
  line("SlurmUser=root");
  line("SlurmdUser=root");
  line("AuthType=auth/munge");
  line("CredType=cred/munge");
  line("StateSaveLocation=/var/spool/slurm/ctld");
  line("SlurmdSpoolDir=/var/spool/slurm/d");
  line("SlurmctldPidFile=/run/slurm/slurmctld.pid");
  line("SlurmdPidFile=/run/slurm/slurmd.pid");
  line("SlurmctldLogFile=/var/log/slurm/slurmctld.log");
  line("SlurmdLogFile=/var/log/slurm/slurmd.log");
  line("PlugStackConfig=/etc/slurm/plugstack.conf");
  line("# Jobs default to --no-kill (cli_filter.lua): a failed node shrinks the job and fails");
  line("# only its running step, which srun --auto-resume=1 then re-runs in the same job.");
  line("CliFilterPlugins=cli_filter/lua");
  line("# A node is a pid namespace, not a cgroup: jobs are tracked by process group.");
  line("ProctrackType=proctrack/linuxproc");
  line("# Auto-resume needs task/none (as the lifecycle-script samples note); cgroups cannot");
  line("# be created on these hosts either.");
  line("TaskPlugin=task/none");
  line("MpiDefault=none");
  line("JobAcctGatherType=jobacct_gather/none");
  line("# A replaced node goes back to service as soon as its new slurmd registers.");
  line("ReturnToService=2");
  line("# Short, so that Slurm itself notices a dead node in seconds; endured watches too.");
  line("SlurmdTimeout=15");
  line("SlurmctldTimeout=30");
  line("MessageTimeout=10");
  line("InactiveLimit=0");
  line("KillWait=5");
  line("MinJobAge=300");
  line("# Nodes declare their instance type's CPUs and memory, not the host's.");
  line("SlurmdParameters=config_overrides");
  line("SelectType=select/cons_tres");
  line("SelectTypeParameters=CR_Core");
  line("# Auto-resume grows a job back onto the node that replaced a failed one.");
  line("SchedulerParameters=permit_job_expansion");
  line("# Talk to every node directly: no message forwarding through a node that just died.");
  line("TreeWidth=65533");
  auto node_line = [&](const spec::NodeSlot& n, const char* state) {
    int cpus = n.type.cpus;
    int tpc = n.threads_per_core > 1 && cpus % n.threads_per_core == 0 ? n.threads_per_core : 1;
    line(fmt::format("NodeName={} NodeAddr={} NodeHostname={} Port={} CPUs={} Sockets=1 "
                     "CoresPerSocket={} ThreadsPerCore={} RealMemory={} State={}",
                     n.node_name, n.address, n.hostname, n.slurmd_port, cpus, cpus / tpc, tpc,
                     n.type.memory_mib, state));
  };
  for (const auto& n : layout.nodes) {
    if (n.role == spec::NodeRole::kWorker) node_line(n, "UNKNOWN");
  }
  if (!layout.future_nodes.empty()) {
    line("# Groups scaled to 0 keep one node declared for later: Slurm needs at least one.");
  }
  for (const auto& n : layout.future_nodes) node_line(n, "FUTURE");
  bool first = true;
  for (const auto& [partition, nodes] : layout.partitions()) {
    std::string list;
    for (const auto& name : nodes) list += (list.empty() ? "" : ",") + name;
    line(fmt::format("PartitionName={} Nodes={} Default={} MaxTime=INFINITE State=UP", partition,
                     list, first ? "YES" : "NO"));
    first = false;
  }
  return seal(out);
}

std::string render_cli_filter() {
  return R"lua(-- cli_filter.lua of an endure cluster, rendered by endured: do not edit.
-- Batch jobs and allocations default to --no-kill. When one of their nodes fails, Slurm
-- then shrinks the job to the nodes that survive and fails only the step that ran there,
-- instead of ending the whole job; srun --auto-resume=1 re-runs that step in the same job
-- once endured has replaced the node. A job can still ask for --no-kill=off.
function slurm_cli_setup_defaults(options, early)
  if options.type == "sbatch" or options.type == "salloc" then
    options["no-kill"] = "set"
  end
  return slurm.SUCCESS
end

function slurm_cli_pre_submit(options, offset)
  return slurm.SUCCESS
end

function slurm_cli_post_submit(offset, job_id, step_id)
  return slurm.SUCCESS
end
)lua";
}

std::string render_hosts(const spec::ClusterLayout& layout) {
  std::string out = "127.0.0.1 localhost\n::1 localhost ip6-localhost ip6-loopback\n";
  for (const auto& n : layout.nodes) out += n.address + " " + n.node_name + "\n";
  return out;
}

std::string content_hash(const std::string& content) {
  uint64_t h = 14695981039346656037ULL;
  for (unsigned char c : content) {
    h ^= c;
    h *= 1099511628211ULL;
  }
  return fmt::format("{:016x}", h);
}

}  // namespace endure::slurm
