"""goreka compat agent: py-eureka-client (PyPI) configured from the environment (APP_NAME, PORT, EUREKA_URL,
METADATA) and serving the agent control endpoints on 127.0.0.1:PORT. See README.md."""

import json
import logging
import os
import signal
import sys
import threading
from http.server import BaseHTTPRequestHandler, ThreadingHTTPServer
from urllib.parse import unquote, urlsplit

import py_eureka_client.eureka_client as eureka_client
import py_eureka_client.logger as eureka_logger


def required(name: str) -> str:
    v = (os.environ.get(name) or "").strip()
    if not v:
        sys.exit(f"environment variable {name} is required")
    return v


APP_NAME = required("APP_NAME")
PORT = int(required("PORT"))
EUREKA_URL = required("EUREKA_URL")
INSTANCE_ID = f"{APP_NAME}:{PORT}"

METADATA = {}
for kv in (os.environ.get("METADATA") or "").split(","):
    if "=" in kv:
        k, v = kv.split("=", 1)
        if k.strip():
            METADATA[k.strip()] = v.strip()

logging.basicConfig(level=logging.INFO, stream=sys.stdout, format="%(asctime)s %(levelname)s %(name)s %(message)s")
log = logging.getLogger("agent")
eureka_logger.set_level(os.environ.get("LOG_LEVEL", "INFO").upper())

client = None  # set once eureka_client.init() has returned
started = threading.Event()
# The sync helpers of py-eureka-client run coroutines on one module-level event loop: one caller at a time.
loop_lock = threading.Lock()


def displayed_url(url: str) -> str:
    parts = urlsplit(url)
    if parts.username is None:
        return url
    return url.replace(parts.netloc, "***@" + parts.netloc.rsplit("@", 1)[1])


def current_apps():
    """The client's local copy (None before the first successful full fetch)."""
    try:
        return client.applications
    except Exception:  # noqa: BLE001 - before the first fetch the property can fail
        return None


def seen(service: str):
    apps = current_apps()
    if apps is None:
        return []
    # get_application() upper-cases the name; up_instances filters status == UP.
    return sorted(apps.get_application(service).up_instances, key=lambda i: i.instanceId or "")


def raw():
    apps = current_apps()
    out = {"localHashCode": "", "apps": {}}
    if apps is None:
        return out
    # The library's own reconcile hash (the one it compares with the delta's apps__hashcode).
    out["localHashCode"] = client._EurekaClient__get_applications_hash()  # pylint: disable=protected-access
    for app in sorted(apps.applications, key=lambda a: a.name):
        rows = sorted(f"{i.instanceId} {i.status}" for i in app.instances)
        if rows:
            out["apps"][app.name] = rows
    return out


class Handler(BaseHTTPRequestHandler):
    protocol_version = "HTTP/1.1"

    def log_message(self, *args):  # keep stdout for the client's own log
        pass

    def send(self, status: int, ctype: str, body: str):
        data = body.encode("utf-8")
        self.send_response(status)
        self.send_header("Content-Type", f"{ctype}; charset=utf-8")
        self.send_header("Content-Length", str(len(data)))
        self.end_headers()
        self.wfile.write(data)

    def do_GET(self):  # noqa: N802
        path = unquote(urlsplit(self.path).path)
        if path == "/hello":
            return self.send(200, "text/plain", f"hello from {INSTANCE_ID}")
        if not started.is_set():
            return self.send(503, "text/plain", "starting")
        if path == "/health":
            return self.send(200, "text/plain", "UP")
        if path == "/raw":
            return self.send(200, "application/json", json.dumps(raw()))
        parts = path.strip("/").split("/")
        if len(parts) == 3 and parts[0] == "seen" and parts[2] == "count":
            return self.send(200, "text/plain", str(len(seen(parts[1]))))
        if len(parts) == 2 and parts[0] == "seen":
            out = [{"instanceId": i.instanceId, "host": i.hostName,
                    "port": i.port.port if i.port else None,
                    "metadata": dict(i.metadata or {})} for i in seen(parts[1])]
            return self.send(200, "application/json", json.dumps(out))
        if len(parts) == 2 and parts[0] == "call":
            return self.call(parts[1])
        return self.send(404, "text/plain", "not found")

    def call(self, service: str):
        if not seen(service):
            return self.send(503, "text/plain", f"no instance of {service}")
        try:
            with loop_lock:
                body = eureka_client.do_service(app_name=service, service="/hello", timeout=5)
        except Exception as e:  # noqa: BLE001 - WalkNodeException when every node failed
            return self.send(503 if "all fail" in str(e) else 502, "text/plain", f"call to {service} failed: {e}")
        return self.send(200, "text/plain", body)


def quiesce_heartbeat_thread():
    """py-eureka-client's stop() runs on the module event loop while its heartbeat thread keeps running on its own
    loop; both share one asyncio.Lock, and a contended lock across two loops either hangs stop() or makes it fail
    with "bound to a different event loop" before the DELETE. So first make the heartbeat thread inert (no more
    heartbeats or fetches) and wait for its in-flight request, then let stop() send POST DOWN + DELETE as usual."""
    async def no_heartbeat(*_args, **_kwargs):
        return None
    client.send_heartbeat = no_heartbeat  # the heartbeat thread looks the method up on the instance
    client._EurekaClient__should_discover = False  # pylint: disable=protected-access
    lock = client._EurekaClient__net_lock  # pylint: disable=protected-access
    idle = 0
    for _ in range(100):  # at most ~10 s
        idle = idle + 1 if not lock.locked() else 0
        if idle >= 3:
            return
        threading.Event().wait(0.1)


def stop_client():
    watchdog = threading.Timer(15, lambda: (log.error("AGENT-STOP-TIMEOUT %s", INSTANCE_ID), os._exit(1)))
    watchdog.daemon = True
    watchdog.start()
    quiesce_heartbeat_thread()
    loop = eureka_client.get_event_loop()
    done = threading.Event()

    def nudge():  # wake the loop if a cross-thread lock release left it sleeping
        while not done.wait(0.1):
            try:
                loop.call_soon_threadsafe(lambda: None)
            except RuntimeError:
                return
    threading.Thread(target=nudge, daemon=True).start()
    try:
        with loop_lock:
            eureka_client.stop()
    finally:
        done.set()
        watchdog.cancel()


def main():
    global client  # noqa: PLW0603
    server = ThreadingHTTPServer(("127.0.0.1", PORT), Handler)
    server.daemon_threads = True
    threading.Thread(target=server.serve_forever, name="control-http", daemon=True).start()
    log.info("AGENT-LISTENING %s on 127.0.0.1:%d", INSTANCE_ID, PORT)

    stop_requested = threading.Event()
    signal.signal(signal.SIGTERM, lambda *_: stop_requested.set())
    signal.signal(signal.SIGINT, lambda *_: stop_requested.set())

    # init() registers (POST), pulls the full registry and starts the heartbeat thread, which every
    # renewal interval sends a heartbeat (or re-registers) and then fetches the delta.
    with loop_lock:
        client = eureka_client.init(
            eureka_server=EUREKA_URL,
            app_name=APP_NAME,
            instance_id=INSTANCE_ID,
            instance_host="localhost",
            instance_ip="127.0.0.1",
            instance_port=PORT,
            vip_adr=APP_NAME,
            secure_vip_addr=APP_NAME,
            home_page_url="/",
            status_page_url="/health",
            health_check_url="/health",
            renewal_interval_in_secs=1,
            # LEASE_DURATION_SECS (run.sh: 10): this client's heartbeat shares one thread with its fetches,
            # so its real period is 1 s + both requests (2-5 s on a loaded machine), longer than a 3 s lease.
            duration_in_secs=int(os.environ.get("LEASE_DURATION_SECS") or "10"),
            metadata=METADATA,
            data_center_name="MyOwn",
        )
    started.set()
    log.info("AGENT-STARTED %s against %s", INSTANCE_ID, displayed_url(EUREKA_URL))

    while not stop_requested.wait(0.5):
        pass
    log.info("AGENT-STOPPING %s: eureka_client.stop() (POST status DOWN, then DELETE)", INSTANCE_ID)
    started.clear()
    stop_client()
    server.shutdown()
    log.info("AGENT-STOPPED %s", INSTANCE_ID)


if __name__ == "__main__":
    main()
