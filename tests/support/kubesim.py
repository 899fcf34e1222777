"""Starting kubesim (tests/kubesim) from a Python test or tool, and waiting until it listens.

    sys.path.insert(0, os.path.join(ROOT, "tests/support"))
    import kubesim
    proc, port = kubesim.start(binary, ["--scenario", path, "--kubeconfig-out", kubeconfig], work)

kubesim writes its port file once it listens, after any kubeconfig it was asked for, and writes
each in one rename: when start() returns, both are there and complete.
"""

import os
import subprocess
import time


def start(binary, args, work, timeout=30):
    """Runs `binary ARGS --port-file WORK/kubesim.port` with its output in WORK/kubesim.log and
    returns (process, port) once it listens. When it exits first or is not listening after
    `timeout` seconds, stops it and exits with the end of its log."""
    port_file = os.path.join(work, "kubesim.port")
    log_path = os.path.join(work, "kubesim.log")
    with open(log_path, "w") as log:
        proc = subprocess.Popen([binary, *args, "--port-file", port_file], stdout=log, stderr=subprocess.STDOUT)
    deadline = time.monotonic() + timeout
    while not os.path.exists(port_file):
        if proc.poll() is not None or time.monotonic() > deadline:
            if proc.poll() is None:
                proc.kill()
                proc.wait()
            with open(log_path) as f:
                tail = f.read()[-4000:]
            raise SystemExit(f"kubesim did not start (exit status {proc.returncode}; log {log_path}):\n{tail}")
        time.sleep(0.05)
    with open(port_file) as f:
        return proc, int(f.read())
