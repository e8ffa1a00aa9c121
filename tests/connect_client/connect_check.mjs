// A real Connect client against fleetprof's Pyroscope query API: @connectrpc/connect-node with
// code protoc-gen-es generated from proto/querier (run from tests/e2e/connect_api_test.cc):
//   node connect_check.mjs --url http://H:P --job JOB --profile ID [--token T]
// For the profile and the job, in JSON and in binary: SelectMergeStacktraces for both profile
// types, its levels rebuilt into a tree the way Grafana's Pyroscope data source does (offsets
// from the previous node's end on a level, a child under the node of the level above that
// spans its start), checked node by node against the HTTP flamegraph route, and its totals
// against the breakdowns; ProfileTypes, LabelNames, LabelValues, SelectSeries; an unknown
// profile type and a bad selector as Code.InvalidArgument. Prints "ok ..." lines; exits 1 at
// the first failure.
import { createClient, ConnectError, Code } from "@connectrpc/connect";
import { createConnectTransport } from "@connectrpc/connect-node";
import { QuerierService } from "./gen/querier/v1/querier_pb.js";

const args = Object.fromEntries(
  process.argv.slice(2).reduce((pairs, a, i, all) => (a.startsWith("--") ? [...pairs, [a.slice(2), all[i + 1]]] : pairs), []));
const DEVICE = "fleetprof:device_time:nanoseconds:device_time:nanoseconds";
const HOST = "fleetprof:host_self_time:nanoseconds:host_self_time:nanoseconds";
const headers = args.token ? { Authorization: `Bearer ${args.token}` } : {};

function fail(message) {
  console.error(`FAIL  ${message}`);
  process.exit(1);
}
function ok(message) {
  console.log(`ok    ${message}`);
}

async function getJson(path) {
  const res = await fetch(args.url + path, { headers });
  if (res.status !== 200) fail(`GET ${path}: HTTP ${res.status} ${await res.text()}`);
  return res.json();
}

// Grafana's reading of a FlameGraph: levels of [offset, total, self, name] groups into a tree.
function rebuild(graph) {
  const names = graph.names;
  const levels = graph.levels.map((l) => l.values.map((v) => BigInt(v)));
  let above = [];
  let root = null;
  levels.forEach((values, depth) => {
    const here = [];
    let end = 0n;
    for (let i = 0; i + 3 < values.length; i += 4) {
      const start = end + values[i];
      const node = { name: names[Number(values[i + 3])], start, total: values[i + 1], self: values[i + 2], children: [] };
      end = start + node.total;
      if (depth === 0) {
        root = node;
      } else {
        const parent = above.findLast((p) => p.start <= start);
        if (!parent || start + node.total > parent.start + parent.total) fail(`level ${depth}: node ${node.name} fits under no parent`);
        parent.children.push(node);
      }
      here.push(node);
    }
    above = here;
  });
  if (root === null) fail("no root level");
  const check = (node) => {
    const sum = node.children.reduce((s, c) => s + check(c), 0n);
    if (node.self + sum !== node.total) fail(`${node.name}: self ${node.self} + children ${sum} != total ${node.total}`);
    return node.total;
  };
  check(root);
  if (root.total !== BigInt(graph.total)) fail(`root total ${root.total} != graph total ${graph.total}`);
  return root;
}

// name path -> [total, self] for every node.
function flatten(node, path = "", out = new Map()) {
  const here = path + "/" + node.name;
  out.set(here, [node.total, node.self]);
  node.children.forEach((c) => flatten(c, here, out));
  return out;
}

function sameTree(a, b, where) {
  const fa = flatten(a), fb = flatten(b);
  if (fa.size !== fb.size) fail(`${where}: ${fa.size} nodes from Connect, ${fb.size} from the HTTP route`);
  for (const [path, [total, self]] of fa) {
    const other = fb.get(path);
    if (!other || other[0] !== total || other[1] !== self) fail(`${where}: ${path} differs (${total}/${self} vs ${other})`);
  }
}

async function expectCode(promise, code, says, where) {
  try {
    await promise;
  } catch (e) {
    const err = ConnectError.from(e);
    if (err.code !== code || !err.rawMessage.includes(says)) fail(`${where}: got ${Code[err.code]} "${err.rawMessage}"`);
    ok(`${where}: ${Code[err.code]} "${err.rawMessage.slice(0, 80)}"`);
    return;
  }
  fail(`${where}: no error`);
}

async function main() {
  const end = BigInt(Date.now() + 60000), start = end - 3600000n * 24n;
  const kernels = await getJson(`/api/v1/profiles/${args.profile}/kernels`);
  const ops = await getJson(`/api/v1/profiles/${args.profile}/ops`);
  const breakdown = {
    [DEVICE]: kernels.kernels.reduce((s, k) => s + BigInt(k.total_ns), 0n),
    [HOST]: ops.ops.reduce((s, o) => s + BigInt(o.self_ns), 0n),
  };
  for (const binary of [false, true]) {
    const client = createClient(QuerierService, createConnectTransport({ baseUrl: args.url, httpVersion: "1.1", useBinaryFormat: binary }));
    const enc = binary ? "proto" : "json";
    const types = await client.profileTypes({}, { headers });
    if (types.profileTypes.map((t) => t.ID).join(",") !== `${DEVICE},${HOST}`) fail(`${enc} ProfileTypes: ${types.profileTypes.map((t) => t.ID)}`);
    ok(`${enc} ProfileTypes: ${types.profileTypes.length} types`);
    const names = await client.labelNames({ matchers: [`{service_name="${args.job}"}`], start, end }, { headers });
    for (const n of ["service_name", "job", "node", "profile_id"]) if (!names.names.includes(n)) fail(`${enc} LabelNames lacks ${n}: ${names.names}`);
    ok(`${enc} LabelNames: ${names.names.join(", ")}`);
    const values = await client.labelValues({ name: "profile_id", matchers: [`{service_name="${args.job}"}`], start, end }, { headers });
    if (!values.names.includes(args.profile)) fail(`${enc} LabelValues profile_id lacks ${args.profile}`);
    ok(`${enc} LabelValues profile_id: ${values.names.length} values`);
    for (const type of [DEVICE, HOST]) {
      const value = type === DEVICE ? "device_ns" : "host_self_ns";
      const one = await client.selectMergeStacktraces({ profileTypeID: type, labelSelector: `{profile_id="${args.profile}"}`, start, end }, { headers });
      const tree = rebuild(one.flamegraph);
      sameTree(tree, rebuild(await getJson(`/api/v1/profiles/${args.profile}/flamegraph?value=${value}`)), `${enc} profile ${value}`);
      if (tree.total !== breakdown[type]) fail(`${enc} profile ${value}: total ${tree.total}, breakdowns ${breakdown[type]}`);
      ok(`${enc} SelectMergeStacktraces profile ${value}: total ${tree.total} = the breakdowns, tree = the HTTP route's`);
      const job = await client.selectMergeStacktraces({ profileTypeID: type, labelSelector: `{service_name="${args.job}"}`, start, end }, { headers });
      sameTree(rebuild(job.flamegraph), rebuild(await getJson(`/api/v1/jobs/${args.job}/flamegraph?value=${value}`)), `${enc} job ${value}`);
      ok(`${enc} SelectMergeStacktraces job ${value}: total ${job.flamegraph.total}, tree = the HTTP route's`);
      const series = await client.selectSeries({ profileTypeID: type, labelSelector: `{profile_id="${args.profile}"}`, start, end, groupBy: ["profile_id"], step: 0 }, { headers });
      if (series.series.length !== 1 || BigInt(series.series[0].points[0].value) !== breakdown[type]) fail(`${enc} SelectSeries: ${JSON.stringify(series.series[0]?.points)}`);
      ok(`${enc} SelectSeries ${value}: one point, ${series.series[0].points[0].value}`);
    }
    await expectCode(client.selectMergeStacktraces({ profileTypeID: "process_cpu:cpu:nanoseconds:cpu:nanoseconds", labelSelector: "{}" }, { headers }),
      Code.InvalidArgument, "unknown profile type", `${enc} unknown profile type`);
    await expectCode(client.selectSeries({ profileTypeID: DEVICE, labelSelector: "{job=~\"(\"}" }, { headers }),
      Code.InvalidArgument, "bad label selector", `${enc} bad selector`);
  }
  console.log("connect_check: ok");
}

main().catch((e) => fail(e.stack || String(e)));
