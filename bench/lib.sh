# Shared by the benches (sourced after tests/lib/common.sh).

# cpu_run OUT CMD...: run CMD, write "user_s sys_s maxrss_kb" (its rusage)
# to OUT; returns CMD's exit status.
cpu_run() {
	python3 -c '
import os, sys
pid = os.fork()
if pid == 0:
    try:
        os.execvp(sys.argv[2], sys.argv[2:])
    finally:
        os._exit(127)
_, st, ru = os.wait4(pid, 0)
with open(sys.argv[1], "w") as f:
    f.write(f"{ru.ru_utime:.6f} {ru.ru_stime:.6f} {ru.ru_maxrss}\n")
sys.exit(os.waitstatus_to_exitcode(st) & 255)
' "$@"
}
