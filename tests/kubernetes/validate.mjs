// Checks the rendered Kubernetes manifests of deploy/kubernetes offline (tests/kubernetes):
// 1. every object against its API schema: kubernetes-models for the built-in kinds,
//    @kubernetes-models/prometheus-operator for ServiceMonitor and PodMonitor (the CRDs'
//    own OpenAPI schemas, compiled). An unknown kind fails: nothing goes unchecked.
// 2. no field the schema does not know (the compiled schemas allow extra fields, an API
//    server with strict field validation does not): each object is walked along the model's
//    type declarations (.d.ts), so a typo such as `hostPid` fails.
// 3. the facts the deployment relies on (assert* below), per rendering.
//   node validate.mjs --modules DIR --grafana DIR --server-flags FILE --agent-flags FILE NAME=FILE.yaml...
// NAME is single, cluster, cluster-mtls or examples. Prints one line per rendering, exit 1 on
// any failure with every failure listed.
import fs from "node:fs";
import path from "node:path";

const args = process.argv.slice(2);
const opt = {};
const renders = [];
for (let i = 0; i < args.length; i++) {
  if (args[i].startsWith("--")) opt[args[i].slice(2)] = args[++i];
  else renders.push(args[i].split("="));
}
const modules = opt.modules;
const { parseAllDocuments } = await import(path.join(modules, "yaml/dist/index.js"));
const failures = [];
const fail = (where, msg) => failures.push(`${where}: ${msg}`);

// ---- 1. schemas -------------------------------------------------------------------------
function modelFile(apiVersion, kind) {
  const [group, version] = apiVersion.includes("/") ? apiVersion.split("/") : ["", apiVersion];
  if (group === "monitoring.coreos.com")
    return path.join(modules, "@kubernetes-models/prometheus-operator", group, version, kind);
  return path.join(modules, "kubernetes-models", group === "" ? version : `${group}/${version}`, kind);
}

// ---- 2. unknown fields, along the models' .d.ts declarations ----------------------------
const declarations = new Map();  // .d.ts file -> {props: Map(name -> type text), imports: Map(name -> file)}
function resolveImport(from, spec) {
  const base = spec.startsWith(".") ? path.resolve(path.dirname(from), spec) : path.join(modules, spec);
  return base.replace(/\.js$/, "") + ".d.ts";
}
function declaration(file) {
  if (declarations.has(file)) return declarations.get(file);
  const text = fs.readFileSync(file, "utf8");
  const imports = new Map();
  for (const m of text.matchAll(/import\s*\{([^}]*)\}\s*from\s*"([^"]+)"/g))
    for (const name of m[1].split(",").map((s) => s.trim()).filter(Boolean)) imports.set(name, resolveImport(file, m[2]));
  // The class repeats every property, inherited ones included.
  const start = text.search(/export declare class \w+[^{]*\{/);
  let props = null;
  if (start >= 0) {
    props = new Map();
    const body = text.slice(text.indexOf("{", start) + 1);
    const prop = /^\s*"([^"]+)"\??:\s*/;
    let i = 0;
    while (i < body.length) {
      const rest = body.slice(i);
      const m = rest.match(prop);
      if (!m) {
        if (/^\s*\}/.test(rest)) break;
        i += rest.indexOf("\n") + 1 || body.length;
        continue;
      }
      let j = i + m[0].length, depth = 0;
      for (; j < body.length; j++) {
        const c = body[j];
        if (c === "{" || c === "<" || c === "(") depth++;
        else if (c === "}" || c === ">" || c === ")") depth--;
        else if (c === ";" && depth === 0) break;
      }
      props.set(m[1], body.slice(i + m[0].length, j).trim());
      i = j + 1;
    }
  }
  const d = { props, imports };
  declarations.set(file, d);
  return d;
}
function checkFields(value, type, file, where) {
  type = type.trim();
  let m;
  if ((m = type.match(/^Array<([\s\S]*)>$/))) {
    if (Array.isArray(value)) value.forEach((v, k) => checkFields(v, m[1], file, `${where}[${k}]`));
  } else if ((m = type.match(/^\{\s*\[key: string\]:\s*([\s\S]*?);?\s*\}$/))) {
    if (value && typeof value === "object") for (const [k, v] of Object.entries(value)) checkFields(v, m[1], file, `${where}.${k}`);
  } else if (/^\w+$/.test(type) && declaration(file).imports.has(type)) {
    checkObject(value, declaration(file).imports.get(type), where);
  }
}
function checkObject(value, file, where) {
  if (!value || typeof value !== "object" || Array.isArray(value)) return;
  const { props } = declaration(file);
  if (!props) return;  // a type alias (IntOrString, Quantity, Time...): the schema checked it
  for (const [k, v] of Object.entries(value)) {
    if (!props.has(k)) fail(where, `unknown field "${k}"`);
    else checkFields(v, props.get(k), file, `${where}.${k}`);
  }
}

async function validate(name, obj) {
  const where = `${name}: ${obj.kind}/${obj.metadata?.name}`;
  const file = modelFile(obj.apiVersion ?? "", obj.kind ?? "");
  if (!fs.existsSync(file + ".js")) return fail(where, `no schema for ${obj.apiVersion} ${obj.kind}`);
  const Model = (await import(file + ".js"))[obj.kind];
  try {
    new Model(structuredClone(obj)).validate();
  } catch (e) {
    fail(where, `schema: ${e.message}`);
  }
  checkObject(obj, file + ".d.ts", where);
}

// ---- 3. facts ---------------------------------------------------------------------------
const byKind = (objs, kind) => objs.filter((o) => o.kind === kind);
const one = (objs, kind, name) => objs.find((o) => o.kind === kind && o.metadata.name === name);
const argValue = (c, flag) => (c.args ?? []).find((a) => a.startsWith(`--${flag}=`))?.slice(flag.length + 3);
const envValue = (c, name) => (c.env ?? []).find((e) => e.name === name);
const mountOf = (pod, c, volumeName) => c.volumeMounts?.find((m) => m.name === volumeName);
const hostPathMountedAt = (pod, c, mountPath) => {
  const m = (c.volumeMounts ?? []).find((v) => v.mountPath === mountPath);
  return m && pod.volumes?.find((v) => v.name === m.name)?.hostPath?.path;
};
const secretMountedAt = (pod, c, dir) => {
  const m = (c.volumeMounts ?? []).find((v) => dir === v.mountPath || dir.startsWith(v.mountPath + "/"));
  return m && pod.volumes?.find((v) => v.name === m.name)?.secret?.secretName;
};
const flagsIn = (file) => new Set(fs.readFileSync(file, "utf8").match(/^\s+--(\w+)/gm).map((s) => s.trim().slice(2)));
const serverFlags = flagsIn(opt["server-flags"]);
const agentFlags = flagsIn(opt["agent-flags"]);
const check = (where, ok, msg) => ok || fail(where, msg);

function assertNoInlineSecrets(name, objs) {
  // Decision: no Secret is ever rendered (no placeholders either); pods only reference them.
  for (const s of byKind(objs, "Secret")) fail(name, `Secret/${s.metadata.name} is rendered: secrets are created by hand`);
  for (const o of objs) {
    const pod = o.spec?.template?.spec;
    for (const c of [...(pod?.containers ?? []), ...(pod?.initContainers ?? [])]) {
      for (const e of c.env ?? [])
        check(`${name}: ${o.kind}/${o.metadata.name}`, !/TOKEN|SECRET|PASSWORD|ACCESS_KEY/i.test(e.name) || !("value" in e),
              `env ${e.name} has an inline value`);
      check(`${name}: ${o.kind}/${o.metadata.name}`, !(c.args ?? []).includes("--insecure"), "uses --insecure");
    }
  }
}

function assertFlagsExist(where, c, known) {
  for (const a of c.args ?? []) {
    const flag = a.match(/^--(\w+)/)?.[1];
    if (flag) check(where, known.has(flag), `--${flag} is not a flag of the binary (--help)`);
  }
}

function agentFacts(name, objs) {
  const ds = one(objs, "DaemonSet", "fleetprof-agent");
  if (!ds) return fail(name, "no DaemonSet fleetprof-agent");
  const where = `${name}: DaemonSet/fleetprof-agent`;
  const pod = ds.spec.template.spec;
  const c = pod.containers.find((x) => x.name === "agent");
  check(where, pod.hostPID === true, "hostPID is not true");
  assertFlagsExist(where, c, agentFlags);
  const socketDir = envValue(c, "KINETO_IPC_SOCKET_DIR")?.value;
  check(where, socketDir && hostPathMountedAt(pod, c, socketDir), "KINETO_IPC_SOCKET_DIR is not a hostPath mount");
  const traceDir = argValue(c, "kineto_trace_dir");
  check(where, traceDir?.startsWith("/tmp/") && hostPathMountedAt(pod, c, traceDir), "--kineto_trace_dir is not a hostPath mount under /tmp/");
  check(where, envValue(c, "NODE_NAME")?.valueFrom?.fieldRef?.fieldPath === "spec.nodeName", "NODE_NAME is not the downward API's spec.nodeName");
  check(where, argValue(c, "node") === "$(NODE_NAME)", "--node is not $(NODE_NAME)");
  check(where, argValue(c, "token_file") === "/secrets/$(NODE_NAME)", "--token_file is not /secrets/$(NODE_NAME)");
  check(where, secretMountedAt(pod, c, "/secrets/x"), "/secrets is not a Secret volume");
  check(where, envValue(c, "NVIDIA_VISIBLE_DEVICES")?.value, "NVIDIA_VISIBLE_DEVICES unset");
  check(where, c.readinessProbe, "no readiness probe");
  check(where, c.resources?.requests?.cpu && c.resources?.requests?.memory && c.resources?.limits?.memory, "resources incomplete");
  check(where, (pod.tolerations ?? []).some((t) => t.key === "nvidia.com/gpu"), "no toleration of nvidia.com/gpu");
  const caps = c.securityContext?.capabilities ?? {};
  check(where, JSON.stringify(caps.drop) === '["ALL"]', "capabilities are not dropped");
  check(where, JSON.stringify([...(caps.add ?? [])].sort()) === '["DAC_READ_SEARCH","SYS_ADMIN","SYS_PTRACE"]',
        `capabilities added: ${caps.add}`);
  const server = argValue(c, "server") ?? "";
  const headless = byKind(objs, "Service").find((s) => s.spec.clusterIP === "None" && s.spec.selector?.["app.kubernetes.io/component"] === "server");
  check(where, headless && server.startsWith(`dns:///${headless.metadata.name}.`), `--server=${server} is not dns:/// on the headless Service`);
  check(where, argValue(c, "tls_ca"), "no --tls_ca");
  return { socketDir, socketHostPath: hostPathMountedAt(pod, c, socketDir), traceDir, traceHostPath: hostPathMountedAt(pod, c, traceDir) };
}

function serverFacts(name, objs) {
  const sts = one(objs, "StatefulSet", "fleetprof-server");
  if (!sts) return fail(name, "no StatefulSet fleetprof-server");
  const where = `${name}: StatefulSet/fleetprof-server`;
  const pod = sts.spec.template.spec;
  const c = pod.containers.find((x) => x.name === "server");
  assertFlagsExist(where, c, serverFlags);
  const readiness = c.readinessProbe;
  check(where, readiness?.httpGet?.path === "/healthz" || (readiness?.exec?.command ?? []).some((a) => a.endsWith("/healthz")),
        "readiness probe is not on /healthz");
  check(where, c.livenessProbe, "no liveness probe");
  for (const flag of ["auth_tokens_file", "tls_cert", "tls_key"]) {
    const file = argValue(c, flag);
    check(where, file && secretMountedAt(pod, c, file), `--${flag} is not a file of a Secret volume`);
  }
  check(where, pod.securityContext?.runAsNonRoot === true && pod.securityContext?.runAsUser !== 0, "the server may run as root");
  check(where, byKind(objs, "PodDisruptionBudget").some((p) => p.spec.selector?.matchLabels?.["app.kubernetes.io/component"] === "server"), "no PodDisruptionBudget for the server");
  check(where, byKind(objs, "NetworkPolicy").some((p) => p.spec.podSelector?.matchLabels?.["app.kubernetes.io/component"] === "server"), "no NetworkPolicy for the server");
  const sm = one(objs, "ServiceMonitor", "fleetprof-server");
  const ep = sm?.spec?.endpoints?.[0];
  check(`${name}: ServiceMonitor/fleetprof-server`, ep?.authorization?.credentials?.name || ep?.bearerTokenSecret?.name, "no token from a Secret");
  return { sts, c, readiness };
}

function grafanaFacts(name, objs) {
  const dashboards = one(objs, "ConfigMap", "fleetprof-grafana-dashboards");
  for (const f of fs.readdirSync(path.join(opt.grafana, "dashboards")).filter((f) => f.endsWith(".json")))
    check(name, dashboards?.data?.[f], `dashboard ${f} is not in the ConfigMap fleetprof-grafana-dashboards (deploy/grafana/kustomization.yaml)`);
  check(name, one(objs, "ConfigMap", "fleetprof-grafana-datasources"), "no Grafana data-source ConfigMap");
}

function overlayFacts(name, objs) {
  assertNoInlineSecrets(name, objs);
  const agent = agentFacts(name, objs);
  const server = serverFacts(name, objs);
  grafanaFacts(name, objs);
  if (!server) return agent;
  const { sts, c, readiness } = server;
  const where = `${name}: StatefulSet/fleetprof-server`;
  if (name === "single") {
    check(where, (sts.spec.replicas ?? 1) === 1, "single runs more than one server");
    check(where, sts.spec.volumeClaimTemplates?.length, "single keeps its database on no PVC");
    check(where, !argValue(c, "object_store"), "single uses an object store");
  } else {
    check(where, sts.spec.replicas >= 2, `replicas ${sts.spec.replicas} < 2`);
    check(where, argValue(c, "object_store")?.startsWith("s3://"), "no --object_store=s3://");
    for (const flag of ["s3_endpoint", "etcd_endpoints", "cache_mb"]) check(where, argValue(c, flag), `no --${flag}`);
    const etcd = one(objs, "StatefulSet", "fleetprof-etcd");
    if (etcd)
      for (const url of argValue(c, "etcd_endpoints").split(","))
        check(where, url.includes(`.${etcd.spec.serviceName}:`), `etcd endpoint ${url} is not a member of StatefulSet/fleetprof-etcd`);
  }
  if (name.endsWith("mtls")) {
    check(where, argValue(c, "tls_client_ca"), "no --tls_client_ca");
    check(where, readiness?.exec && !readiness.httpGet, "with mTLS the readiness probe must be exec (a kubelet presents no client certificate)");
    const a = one(objs, "DaemonSet", "fleetprof-agent").spec.template.spec.containers[0];
    check(`${name}: DaemonSet/fleetprof-agent`, argValue(a, "tls_cert") && argValue(a, "tls_key"), "no client certificate");
  } else {
    check(where, readiness?.httpGet?.scheme === "HTTPS", "readiness probe is not HTTPS");
  }
  return agent;
}

function exampleFacts(objs, agent) {
  const name = "examples";
  const podOf = (jobName) => one(objs, "Job", jobName)?.spec?.template?.spec;
  const torch = podOf("resnet-train");
  if (!torch) return fail(name, "no PyTorch Job resnet-train");
  const c = torch.containers[0];
  const where = `${name}: Job/resnet-train`;
  check(where, envValue(c, "KINETO_USE_DAEMON")?.value === "1", "KINETO_USE_DAEMON is not 1");
  check(where, envValue(c, "FLEETPROF_JOB"), "no FLEETPROF_JOB");
  const socketDir = envValue(c, "KINETO_IPC_SOCKET_DIR")?.value;
  check(where, socketDir === agent.socketDir, `KINETO_IPC_SOCKET_DIR ${socketDir} differs from the agent's ${agent.socketDir}`);
  check(where, hostPathMountedAt(torch, c, socketDir) === agent.socketHostPath,
        `the socket folder is not the agent's hostPath ${agent.socketHostPath}`);
  check(where, hostPathMountedAt(torch, c, agent.traceDir) === agent.traceHostPath,
        `${agent.traceDir} is not the agent's hostPath ${agent.traceHostPath}`);
  const jax = podOf("llama-jax");
  if (!jax) return fail(name, "no JAX Job llama-jax");
  const j = jax.containers[0];
  const addr = envValue(j, "FLEETPROF_XPROF_ADDR")?.value ?? "";
  const port = addr.match(/^127\.0\.0\.1:(\d+)$/)?.[1];
  check(`${name}: Job/llama-jax`, port && j.command.join(" ").includes(`jax.profiler.start_server(${port})`),
        `FLEETPROF_XPROF_ADDR ${addr} is not the loopback port jax.profiler.start_server listens on`);
  check(`${name}: Job/llama-jax`, envValue(j, "FLEETPROF_JOB"), "no FLEETPROF_JOB");
}

// ---- run ----------------------------------------------------------------------------------
const rendered = {};
for (const [name, file] of renders) {
  const docs = parseAllDocuments(fs.readFileSync(file, "utf8"));
  rendered[name] = docs.map((d) => d.toJS()).filter(Boolean);
  for (const d of docs) for (const e of d.errors) fail(name, `YAML: ${e.message}`);
  for (const obj of rendered[name]) await validate(name, obj);
}
let agent;
for (const name of Object.keys(rendered).filter((n) => n !== "examples")) agent = overlayFacts(name, rendered[name]) ?? agent;
if (rendered.examples && agent) exampleFacts(rendered.examples, agent);
for (const [name, objs] of Object.entries(rendered)) {
  const kinds = {};
  for (const o of objs) kinds[o.kind] = (kinds[o.kind] ?? 0) + 1;
  console.log(`${name}: ${objs.length} objects checked (${Object.entries(kinds).map(([k, n]) => `${n} ${k}`).join(", ")})`);
}
if (failures.length) {
  console.error(failures.map((f) => `FAIL ${f}`).join("\n"));
  process.exit(1);
}
console.log("all renderings valid, facts hold");
