"""Drives endured with boto3, as a user's pipeline would: create a cluster, describe it,
change its memory tier (TieredStorageConfig, a bad value refused), list its nodes, replace
a worker and see it replaced, list and describe events, delete it.

Run by aws_clients_test.cpp with the credentials in AWS_ACCESS_KEY_ID and
AWS_SECRET_ACCESS_KEY and AWS_CONFIG_FILE / AWS_SHARED_CREDENTIALS_FILE pointed at empty
files.  Usage: aws_boto3_client.py ENDPOINT_URL SPEC_JSON
Exit 0 when every step held (prints OK), 1 with the step that failed, 77 when boto3 or its
cluster actions are missing here.
"""
import json
import sys
import time

try:
    import boto3
    import botocore.exceptions
except ImportError as e:
    print(f"boto3 is not importable: {e}")
    sys.exit(77)


def wait(what, check, timeout=240):
    deadline = time.time() + timeout
    while time.time() < deadline:
        value = check()
        if value:
            return value
        time.sleep(1)
    raise SystemExit(f"timed out waiting for {what}")


def main():
    endpoint, spec_path = sys.argv[1], sys.argv[2]
    with open(spec_path) as f:
        spec = json.load(f)
    name = spec["ClusterName"]
    sm = boto3.client("sagemaker", endpoint_url=endpoint, region_name="us-east-1")
    if not hasattr(sm, "batch_replace_cluster_nodes"):
        print(f"botocore {botocore.__version__} predates BatchReplaceClusterNodes")
        sys.exit(77)

    arn = sm.create_cluster(**spec)["ClusterArn"]
    print("created", arn)

    def in_service():
        return sm.describe_cluster(ClusterName=name)["ClusterStatus"] == "InService"

    wait("InService", in_service)
    cluster = sm.describe_cluster(ClusterName=name)
    assert cluster["ClusterArn"] == arn, cluster
    # botocore parses the protocol's epoch seconds into a datetime.
    assert hasattr(cluster["CreationTime"], "year"), cluster["CreationTime"]
    assert cluster["TieredStorageConfig"] == spec["TieredStorageConfig"], cluster

    # The memory tier alone, as the cloud's UpdateCluster takes it; echoed as set.
    tier = {"Mode": "Enable", "InstanceMemoryAllocationPercentage": 40}
    sm.update_cluster(ClusterName=name, TieredStorageConfig=tier)
    wait("InService after the update", in_service)
    cluster = sm.describe_cluster(ClusterName=name)
    assert cluster["TieredStorageConfig"] == tier, cluster
    # Bad values reach endured (botocore checks neither the enum nor the maximum) and are
    # refused with the field named; nothing changes.
    for bad, message in [
            ({"Mode": "Sometimes"}, "TieredStorageConfig.Mode: must be one of Enable, Disable"),
            ({"Mode": "Enable", "InstanceMemoryAllocationPercentage": 101},
             "TieredStorageConfig.InstanceMemoryAllocationPercentage: "
             "must be an integer from 0 to 100")]:
        try:
            sm.update_cluster(ClusterName=name, TieredStorageConfig=bad)
            raise SystemExit(f"UpdateCluster took TieredStorageConfig {bad}")
        except botocore.exceptions.ClientError as e:
            assert e.response["Error"]["Code"] == "ValidationException", e.response
            assert e.response["Error"]["Message"] == message, e.response
    cluster = sm.describe_cluster(ClusterName=name)
    assert cluster["TieredStorageConfig"] == tier, cluster
    assert cluster["ClusterStatus"] == "InService", cluster

    pages = sm.get_paginator("list_cluster_nodes").paginate(
        ClusterName=name, PaginationConfig={"PageSize": 1})
    nodes = [n for page in pages for n in page["ClusterNodeSummaries"]]
    total = sum(g["InstanceCount"] for g in spec["InstanceGroups"])
    assert len(nodes) == total, nodes
    workers = [n for n in nodes if n["InstanceGroupName"] == "worker"]
    old = workers[0]
    print("replacing", old["InstanceId"], old.get("PrivateDnsHostname"))
    reply = sm.batch_replace_cluster_nodes(ClusterName=name, NodeIds=[old["InstanceId"]])
    assert reply["Successful"] == [old["InstanceId"]], reply

    def replaced():
        for n in sm.list_cluster_nodes(ClusterName=name)["ClusterNodeSummaries"]:
            if (n.get("PrivateDnsHostname") == old.get("PrivateDnsHostname")
                    and n["InstanceId"] != old["InstanceId"]
                    and n["InstanceStatus"]["Status"] == "Running"):
                return n
        return None

    new = wait("the replacement", replaced)
    print("replaced by", new["InstanceId"])

    events = sm.list_cluster_events(ClusterName=name, MaxResults=100)["Events"]
    assert events and all(isinstance(e["EventId"], str) for e in events), events
    detail = sm.describe_cluster_event(ClusterName=name, EventId=events[0]["EventId"])
    assert detail["EventDetails"]["EventId"] == events[0]["EventId"], detail

    try:
        sm.describe_cluster(ClusterName="no-such-cluster")
        raise SystemExit("describe of a missing cluster succeeded")
    except botocore.exceptions.ClientError as e:
        assert e.response["Error"]["Code"] == "ResourceNotFound", e.response
        assert e.response["ResponseMetadata"]["RequestId"], e.response

    sm.delete_cluster(ClusterName=name)

    def gone():
        try:
            sm.describe_cluster(ClusterName=name)
            return False
        except botocore.exceptions.ClientError as e:
            return e.response["Error"]["Code"] == "ResourceNotFound"

    wait("the cluster to be deleted", gone)
    print("OK")


if __name__ == "__main__":
    try:
        main()
    except AssertionError as e:
        print(f"assertion failed: {e!r}")
        sys.exit(1)
