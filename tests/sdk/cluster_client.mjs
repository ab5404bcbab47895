// Drives endured with the cloud's JavaScript SDK v3 (@aws-sdk/client-sagemaker, pinned in
// package-lock.json, installed by scripts/setup.sh on every machine), as a user's pipeline
// would: create a cluster with its Slurm roles in the request, describe it, list its nodes
// in pages, add nodes (the same ClientToken twice), find one by its NodeLogicalId, delete
// workers by instance id and by NodeLogicalId, read the events in pages, delete the
// cluster; and the errors an SDK user branches on, by their exact code and HTTP status.
//
// Run by tests/integration/aws_clients_test.cpp with endured's key in AWS_ACCESS_KEY_ID and
// AWS_SECRET_ACCESS_KEY. Usage: node cluster_client.mjs ENDPOINT_URL SPEC_JSON
// Prints each step as it starts; exit 0 and "OK" when every step held, 1 naming the step
// that failed.
import assert from "node:assert/strict";
import { readFileSync } from "node:fs";
import { createRequire } from "node:module";
import {
  SageMakerClient,
  CreateClusterCommand,
  DescribeClusterCommand,
  ListClustersCommand,
  UpdateClusterCommand,
  DescribeClusterNodeCommand,
  BatchDeleteClusterNodesCommand,
  BatchAddClusterNodesCommand,
  DescribeClusterEventCommand,
  DeleteClusterCommand,
  paginateListClusterNodes,
  paginateListClusterEvents,
} from "@aws-sdk/client-sagemaker";

const [endpoint, specPath] = process.argv.slice(2);
const spec = JSON.parse(readFileSync(specPath, "utf8"));
const name = spec.ClusterName;
const key = {
  accessKeyId: process.env.AWS_ACCESS_KEY_ID,
  secretAccessKey: process.env.AWS_SECRET_ACCESS_KEY,
};

function client(credentials, options = {}) {
  return new SageMakerClient({ endpoint, region: "us-east-1", credentials, ...options });
}
const sm = client(key);

let current = "start";
function step(what) {
  current = what;
  console.log(`step: ${what}`);
}

async function waitFor(what, check, seconds = 240) {
  const deadline = Date.now() + seconds * 1000;
  while (Date.now() < deadline) {
    const value = await check();
    if (value) return value;
    await new Promise((resolve) => setTimeout(resolve, 1000));
  }
  throw new Error(`timed out after ${seconds} s waiting for ${what}`);
}

// The call must fail with exactly this error code and HTTP status; returns the error.
async function refused(call, code, status) {
  try {
    const reply = await call();
    assert.fail(`expected ${code}, got a reply: ${JSON.stringify(reply)}`);
  } catch (e) {
    if (e instanceof assert.AssertionError) throw e;
    assert.equal(e.name, code, `${e.name}: ${e.message}`);
    assert.equal(e.$metadata?.httpStatusCode, status, `${code}: HTTP status`);
    assert.ok(e.$metadata?.requestId, `${code}: no request id`);
    return e;
  }
}

async function clusterCount() {
  return (await sm.send(new ListClustersCommand({}))).ClusterSummaries.length;
}

async function status() {
  return (await sm.send(new DescribeClusterCommand({ ClusterName: name }))).ClusterStatus;
}

async function allNodes() {
  const nodes = [];
  for await (const page of paginateListClusterNodes(
    { client: sm, pageSize: 1 },
    { ClusterName: name },
  )) {
    assert.ok(page.ClusterNodeSummaries.length <= 1, "a page holds more than MaxResults");
    nodes.push(...page.ClusterNodeSummaries);
  }
  return nodes;
}

async function main() {
  const sdk = createRequire(import.meta.url)("@aws-sdk/client-sagemaker/package.json");
  console.log(`node ${process.version}, ${sdk.name} ${sdk.version}`);
  step("a wrong secret is InvalidSignatureException, 403, and creates nothing");
  const wrongSecret = client({ ...key, secretAccessKey: `${key.secretAccessKey}x` }, { maxAttempts: 1 });
  const e = await refused(
    () => wrongSecret.send(new CreateClusterCommand(spec)),
    "InvalidSignatureException",
    403,
  );
  assert.ok(!e.message.includes(key.secretAccessKey), "the error shows the secret");
  step("an unknown key is UnrecognizedClientException, 403");
  const unknownKey = client({ ...key, accessKeyId: "AKIA0000000000000000" }, { maxAttempts: 1 });
  await refused(
    () => unknownKey.send(new ListClustersCommand({})),
    "UnrecognizedClientException",
    403,
  );
  assert.equal(await clusterCount(), 0);

  step("a bad spec is ValidationException, 400, naming the field and the rule");
  const bad = structuredClone(spec);
  bad.InstanceGroups[1].InstanceCount = -1;
  const invalid = await refused(() => sm.send(new CreateClusterCommand(bad)), "ValidationException", 400);
  assert.match(invalid.message, /InstanceGroups\[1\]\.InstanceCount: /);
  assert.equal(await clusterCount(), 0);

  step("create");
  const { ClusterArn: arn } = await sm.send(new CreateClusterCommand(spec));
  assert.match(arn, /^arn:.+:cluster\/[a-z0-9]+$/);
  step("the same name again is ResourceInUse, 400");
  await refused(() => sm.send(new CreateClusterCommand(spec)), "ResourceInUse", 400);
  await waitFor("InService", async () => (await status()) === "InService");

  step("describe");
  const cluster = await sm.send(new DescribeClusterCommand({ ClusterName: name }));
  assert.equal(cluster.ClusterArn, arn);
  assert.ok(cluster.CreationTime instanceof Date, "CreationTime is not parsed as a time");
  assert.deepEqual(cluster.TieredStorageConfig, spec.TieredStorageConfig);
  assert.deepEqual(cluster.Orchestrator, spec.Orchestrator);
  const groups = Object.fromEntries(cluster.InstanceGroups.map((g) => [g.InstanceGroupName, g]));
  for (const g of spec.InstanceGroups) {
    assert.equal(groups[g.InstanceGroupName].CurrentCount, g.InstanceCount, g.InstanceGroupName);
    assert.equal(groups[g.InstanceGroupName].TargetCount, g.InstanceCount, g.InstanceGroupName);
    assert.deepEqual(groups[g.InstanceGroupName].SlurmConfig, g.SlurmConfig);
  }

  step("a bad memory tier is refused and changes nothing");
  const badTier = await refused(
    () =>
      sm.send(
        new UpdateClusterCommand({
          ClusterName: name,
          TieredStorageConfig: { Mode: "Enable", InstanceMemoryAllocationPercentage: 101 },
        }),
      ),
    "ValidationException",
    400,
  );
  assert.equal(
    badTier.message,
    "TieredStorageConfig.InstanceMemoryAllocationPercentage: must be an integer from 0 to 100",
  );
  assert.equal(await status(), "InService");

  step("list the nodes, a page at a time");
  const total = spec.InstanceGroups.reduce((n, g) => n + g.InstanceCount, 0);
  const nodes = await allNodes();
  assert.equal(nodes.length, total);
  assert.equal(new Set(nodes.map((n) => n.InstanceId)).size, total, "a node listed twice");
  for (const n of nodes) {
    assert.equal(n.InstanceStatus.Status, "Running", n.InstanceId);
    assert.ok(n.LaunchTime instanceof Date);
    assert.match(n.NodeLogicalId, /^[a-zA-Z0-9][a-zA-Z0-9-]*[a-zA-Z0-9]$/);
  }

  step("add two workers; the same ClientToken again adds nothing");
  const add = {
    ClusterName: name,
    ClientToken: "js-add-1",
    NodesToAdd: [{ InstanceGroupName: "worker", IncrementTargetCountBy: 2 }],
  };
  const added = await sm.send(new BatchAddClusterNodesCommand(add));
  assert.equal(added.Successful.length, 2, JSON.stringify(added));
  assert.deepEqual(added.Failed, []);
  const again = await sm.send(new BatchAddClusterNodesCommand(add));
  assert.deepEqual(
    again.Successful.map((n) => n.NodeLogicalId).sort(),
    added.Successful.map((n) => n.NodeLogicalId).sort(),
  );
  step("a bad NodesToAdd is ValidationException, 400; a missing group is answered in Failed");
  const tooMany = await refused(
    () =>
      sm.send(
        new BatchAddClusterNodesCommand({
          ClusterName: name,
          NodesToAdd: [{ InstanceGroupName: "worker", IncrementTargetCountBy: 51 }],
        }),
      ),
    "ValidationException",
    400,
  );
  assert.equal(tooMany.message, "NodesToAdd[0].IncrementTargetCountBy: must be an integer from 1 to 50");
  const missing = await sm.send(
    new BatchAddClusterNodesCommand({
      ClusterName: name,
      NodesToAdd: [{ InstanceGroupName: "nope", IncrementTargetCountBy: 1 }],
    }),
  );
  assert.equal(missing.Failed[0].ErrorCode, "InstanceGroupNotFound");
  await waitFor("InService after the add", async () => (await status()) === "InService");
  const grown = await allNodes();
  assert.equal(grown.length, total + 2);
  for (const n of added.Successful) {
    assert.ok(grown.some((g) => g.NodeLogicalId === n.NodeLogicalId), n.NodeLogicalId);
  }

  step("describe a node; a missing one is ResourceNotFound, 400");
  const worker = nodes.find((n) => n.InstanceGroupName === "worker");
  const node = await sm.send(
    new DescribeClusterNodeCommand({ ClusterName: name, NodeId: worker.InstanceId }),
  );
  assert.equal(node.NodeDetails.InstanceId, worker.InstanceId);
  assert.equal(node.NodeDetails.PrivateDnsHostname, worker.PrivateDnsHostname);
  await refused(
    () => sm.send(new DescribeClusterNodeCommand({ ClusterName: name, NodeId: "i-0000000000000000" })),
    "ResourceNotFound",
    400,
  );

  step("describe an added node by its NodeLogicalId, then delete it by that id");
  const logical = added.Successful[0].NodeLogicalId;
  const byLogical = await sm.send(
    new DescribeClusterNodeCommand({ ClusterName: name, NodeLogicalId: logical }),
  );
  assert.equal(byLogical.NodeDetails.NodeLogicalId, logical);
  assert.equal(byLogical.NodeDetails.InstanceStatus.Status, "Running");
  const gone = await sm.send(
    new BatchDeleteClusterNodesCommand({ ClusterName: name, NodeLogicalIds: [logical] }),
  );
  assert.deepEqual(gone.SuccessfulNodeLogicalIds, [logical]);
  await waitFor("the added node gone", async () =>
    (await allNodes()).every((n) => n.NodeLogicalId !== logical),
  );
  await waitFor("InService after that delete", async () => (await status()) === "InService");

  step("delete a worker");
  const deleted = await sm.send(
    new BatchDeleteClusterNodesCommand({ ClusterName: name, NodeIds: [worker.InstanceId] }),
  );
  assert.deepEqual(deleted.Successful, [worker.InstanceId]);
  await waitFor("the worker gone", async () =>
    (await allNodes()).every((n) => n.InstanceId !== worker.InstanceId),
  );
  await waitFor("InService after the delete", async () => (await status()) === "InService");

  step("the events, a page at a time, the deleted worker among them");
  const events = [];
  for await (const page of paginateListClusterEvents(
    { client: sm, pageSize: 5 },
    { ClusterName: name },
  )) {
    assert.ok(page.Events.length <= 5, "a page holds more than MaxResults");
    events.push(...page.Events);
  }
  assert.ok(events.length > 5, `only ${events.length} events: the paging was not tried`);
  assert.equal(new Set(events.map((ev) => ev.EventId)).size, events.length, "an event listed twice");
  assert.ok(events.some((ev) => ev.InstanceId === worker.InstanceId), "no event names the worker");
  const detail = await sm.send(
    new DescribeClusterEventCommand({ ClusterName: name, EventId: events[0].EventId }),
  );
  assert.equal(detail.EventDetails.EventId, events[0].EventId);

  step("a missing cluster is ResourceNotFound, 400");
  await refused(
    () => sm.send(new DescribeClusterCommand({ ClusterName: "no-such-cluster" })),
    "ResourceNotFound",
    400,
  );

  step("delete the cluster");
  await sm.send(new DeleteClusterCommand({ ClusterName: name }));
  await waitFor("the cluster gone", async () => (await clusterCount()) === 0);
  console.log("OK");
}

main().catch((e) => {
  console.log(`failed at step "${current}": ${e.stack ?? e}`);
  process.exit(1);
});
