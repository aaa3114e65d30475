// Validates Prometheus Operator resources (PodMonitor, PrometheusRule) against the schemas of
// the operator's CRDs, as packaged by @kubernetes-models/prometheus-operator (kubernetes-validate
// knows only built-in kinds). Usage: NODE_PATH=target/clients/node/node_modules
// node validate_crds.mjs FILE...  Prints one line per resource; exits 1 if any is invalid or
// of a kind this script does not know. (ES modules ignore NODE_PATH, hence the explicit paths.)
import fs from "node:fs";
import path from "node:path";
import { pathToFileURL } from "node:url";

const modules = process.env.NODE_PATH;
const load = (p) => import(pathToFileURL(path.join(modules, p)).href);
const yaml = (await load("js-yaml/dist/js-yaml.mjs")).default;
const v1 = await load("@kubernetes-models/prometheus-operator/monitoring.coreos.com/v1/index.js");

let failed = false;
for (const file of process.argv.slice(2)) {
  for (const doc of yaml.loadAll(fs.readFileSync(file, "utf8"))) {
    if (!doc) continue;
    const Kind = doc.apiVersion === "monitoring.coreos.com/v1" ? v1[doc.kind] : undefined;
    if (!Kind) {
      console.log(`FAIL ${file}: unknown kind ${doc.apiVersion} ${doc.kind}`);
      failed = true;
      continue;
    }
    try {
      new Kind(doc).validate();
      console.log(`OK ${file}: ${doc.kind}/${doc.metadata.name}`);
    } catch (e) {
      console.log(`FAIL ${file}: ${doc.kind}: ${e.message}`);
      failed = true;
    }
  }
}
process.exit(failed ? 1 : 0);
