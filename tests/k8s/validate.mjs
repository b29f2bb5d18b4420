// tests/k8s/validate.mjs MANIFEST...: every document of each manifest checked against the
// Kubernetes API's schemas (the kubernetes-models package, generated from the API's OpenAPI
// specification): types, enums, required fields, formats. A PyTorchJob (kubeflow.org/v1) has no
// schema there: each of its replicas' pod templates is checked as a core PodTemplate instead.
// What the schemas do not say is not checked: unknown fields (the API server drops them), values
// one field constrains in another, and anything a controller or a cluster decides.
// Prints "ok" or "FAIL" per document; exit 1 when one fails or has no schema here.
import { readFileSync } from "node:fs";
import { parseAllDocuments } from "yaml";

const models = {
  "v1/Service": "kubernetes-models/v1/Service",
  "v1/PersistentVolumeClaim": "kubernetes-models/v1/PersistentVolumeClaim",
  "v1/PodTemplate": "kubernetes-models/v1/PodTemplate",
  "v1/ConfigMap": "kubernetes-models/v1/ConfigMap",
  "v1/Secret": "kubernetes-models/v1/Secret",
  "batch/v1/Job": "kubernetes-models/batch/v1/Job",
};

let failed = 0;
async function check(file, obj, what) {
  const key = `${obj.apiVersion}/${obj.kind}`;
  if (!models[key]) {
    console.log(`FAIL ${file}: ${what}: no schema for ${key} here`);
    failed++;
    return;
  }
  const { [obj.kind]: Model } = await import(models[key]);
  try {
    new Model(obj).validate();
    console.log(`ok   ${file}: ${what} (${key})`);
  } catch (e) {
    console.log(`FAIL ${file}: ${what} (${key}): ${e.message}`);
    failed++;
  }
}

for (const file of process.argv.slice(2)) {
  for (const doc of parseAllDocuments(readFileSync(file, "utf8"))) {
    if (doc.errors.length) {
      console.log(`FAIL ${file}: not YAML: ${doc.errors[0].message}`);
      failed++;
      continue;
    }
    const obj = doc.toJS();
    if (!obj) continue;
    if (obj.apiVersion === "kubeflow.org/v1" && obj.kind === "PyTorchJob") {
      for (const [role, spec] of Object.entries(obj.spec?.pytorchReplicaSpecs ?? {})) {
        const asTemplate = { apiVersion: "v1", kind: "PodTemplate", metadata: { name: role.toLowerCase() },
                             template: spec.template };
        await check(file, asTemplate, `PyTorchJob ${obj.metadata?.name}, ${role}'s pod template`);
      }
      continue;
    }
    await check(file, obj, `${obj.kind} ${obj.metadata?.name}`);
  }
}
process.exit(failed ? 1 : 0);
