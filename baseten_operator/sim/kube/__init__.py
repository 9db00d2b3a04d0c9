"""An in-process Kubernetes API server for tests, e2e runs and the sandbox.

It serves what the operator, the official `kubernetes` Python client and `kubectl` use:
core/v1 namespaces, configmaps, secrets and events, events.k8s.io/v1 events,
coordination.k8s.io/v1 leases, CustomResourceDefinitions and the custom resources they
define (plus ServiceAccounts, Services, Pods, Deployments, PodDisruptionBudgets, NetworkPolicies
and RBAC kinds, stored only, so install manifests apply), with discovery, resourceVersions,
watches, patches, finalizers, status subresources, dry runs and table output (see
docs/kube-emulation.md). Request bodies are JSON or YAML, and protobuf for Secrets and
DeleteOptions (what client-go's typed clients send, Helm's release storage among them;
protobuf.py).

    server = KubeApiServer()            # host="127.0.0.1", port=0 (ephemeral)
    url = server.start()
    server.write_kubeconfig(path)       # for KubeClient.from_kubeconfig / kubectl
    ...
    server.stop()

Standalone: `python -m baseten_operator.sim.kube --port 8001 --kubeconfig /tmp/kubeconfig`.

Fault injection, in process or as JSON over HTTP (`POST /_sim/faults`):

    server.drop_watches(graceful=False)  {"action": "drop_watches", "graceful": false}
    server.stall_watches(True|False)     {"action": "stall_watches", "stalled": true}
    server.fail_next(n, status=500, verb="get", resource="configmaps", retry_after=2)
                                         {"action": "fail_next", "count": n, "status": 429,
                                          "verb": "update", "resource": "basetenmodels",
                                          "retry_after": 2}
        (verb: get/list/watch/create/update/patch/delete/deletecollection; resource: plural or
         plural.group; both optional; 429 answers carry Retry-After)
    server.set_latency(seconds)          {"action": "set_latency", "seconds": 0.05}
    server.compact()                     {"action": "compact"}  (watches from older
                                          resourceVersions get a 410 Expired ERROR event)
    server.clear_faults()                {"action": "clear"}
    server.reset()                       {"action": "reset"}  (fresh state, faults cleared)
`GET /_sim/state` answers {"resourceVersion": "...", "watches": <open watch streams>}.
`GET /_sim/writes?since=N` lists every write request received (verb, resource, namespace, name,
subresource, User-Agent, time) from index N on; `server.writes` is the same log in process.

`stop()` hangs up on every client; a later `start()` serves the same state on the same port
(an API server outage). `/openapi/v3` advertises `fieldValidation` so kubectl leaves validation
to the server: `fieldValidation=Strict` (what `kubectl apply` sends) rejects unknown fields of
custom resources with 400, other modes prune them silently.

Deliberate simplifications: server-side apply is a merge of the applied configuration (no
field ownership); no garbage collection by ownerReferences; no authentication or RBAC;
namespace and CRD deletion drain their contents synchronously; the clock given to the
server stamps objects, while watch timeouts and bookmarks follow real time.

Modules, outside in: `server.py` (`KubeApiServer`: an emulator on a port) and `handler.py`
(HTTP: routing, discovery documents, review APIs, `/_sim/`) serve an `emulator.py`
`KubeEmulator` (state and fault controls); `calls.py` (a request's target, options, body),
`verbs.py` (get, list, create, update, patch, delete) and `watchstream.py` (one watch stream)
answer the API; `store.py` (objects, resourceVersions, the verbs' semantics, cascading
deletes) keeps what `admission.py` (body checks, metadata validation, `schema.py` with
`cel.py`, per-type preparation, `crds.py`) admits, and `fanout.py` feeds its changes to the
`watch.py` watchers. The rest are parts: `resources.py`, `selectors.py`, `patching.py`,
`tables.py`, `openapi.py`, `protobuf.py`, `auth.py`, `faults.py`, `writelog.py`, `errors.py`.

Must not import the operator (`api`, `baseten`, `truss`, `controller`, `sandbox`, `cli`,
`main`): it emulates Kubernetes, not this project. From `runtime` only the clock
and the bounded HTTP server (httpserver.py).
"""

from .server import KubeApiServer

__all__ = ["KubeApiServer"]
