#!/usr/bin/env python3
"""cpu_run.py OUT CMD...: run CMD; write "user_s sys_s maxrss_kb wall_s" to OUT.

The figures come from wait4() (CMD and every child it waited for); wall is
the monotonic time from fork to reaping. With PIDFILE in the environment,
CMD's PID is written there (atomically) once it runs. Exits with CMD's
status.
"""
import os
import sys
import time

t0 = time.monotonic()
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
if os.environ.get("PIDFILE"):
    with open(os.environ["PIDFILE"] + ".tmp", "w") as f:
        f.write(f"{pid}\n")
    os.rename(os.environ["PIDFILE"] + ".tmp", os.environ["PIDFILE"])
_, st, ru = os.wait4(pid, 0)
wall = time.monotonic() - t0
with open(sys.argv[1], "w") as f:
    f.write(f"{ru.ru_utime:.6f} {ru.ru_stime:.6f} {ru.ru_maxrss} {wall:.6f}\n")
sys.exit(os.waitstatus_to_exitcode(st) & 255)
