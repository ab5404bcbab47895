"""The cluster specs bench/autoresume creates (create-cluster --cli-input-json), printed as
JSON, called by run.sh as

    python3 specs.py bench LIFECYCLE_DIR NAME        # 1 controller + 4 workers, local.c2
    python3 specs.py placeholder LIFECYCLE_DIR NAME  # holds a cluster index, runs nothing
"""
import json
import sys


def bench(lifecycle_dir, name):
    lc = {"SourceS3Uri": lifecycle_dir, "OnCreate": "on_create.sh"}
    print(json.dumps({"ClusterName": name, "NodeRecovery": "Automatic", "InstanceGroups": [
        {"InstanceGroupName": "controller", "InstanceType": "local.c2", "InstanceCount": 1, "LifeCycleConfig": lc, "ThreadsPerCore": 1},
        {"InstanceGroupName": "worker", "InstanceType": "local.c2", "InstanceCount": 4, "LifeCycleConfig": lc, "ThreadsPerCore": 1}]}, indent=1))


def placeholder(lifecycle_dir, name):
    lc = {"SourceS3Uri": lifecycle_dir, "OnCreate": "on_create.sh"}
    print(json.dumps({"ClusterName": name, "NodeRecovery": "None", "InstanceGroups": [
        {"InstanceGroupName": "controller", "InstanceType": "local.c1", "InstanceCount": 1, "LifeCycleConfig": lc},
        {"InstanceGroupName": "worker", "InstanceType": "local.c1", "InstanceCount": 0, "LifeCycleConfig": lc}]}))


if __name__ == "__main__":
    command, args = sys.argv[1], sys.argv[2:]
    if command == "bench":
        bench(*args)
    elif command == "placeholder":
        placeholder(*args)
    else:
        sys.exit("specs.py: unknown command: " + command)
