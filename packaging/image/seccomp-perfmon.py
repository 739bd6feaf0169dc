#!/usr/bin/env python3
# seccomp-perfmon.py IN OUT: the container runtime's default seccomp profile
# (IN, e.g. /usr/share/containers/seccomp.json) with perf_event_open allowed
# to a container granted CAP_PERFMON. The default allows perf_event_open only
# with CAP_SYS_ADMIN; this keeps every other rule as it is.
import json
import sys

src, dst = sys.argv[1], sys.argv[2]
with open(src) as f:
    prof = json.load(f)
rules = []
for rule in prof["syscalls"]:
    names = rule.get("names", [])
    # the rule that refuses it without CAP_SYS_ADMIN: drop the name there
    if "perf_event_open" in names and rule.get("action") != "SCMP_ACT_ALLOW":
        rule = dict(rule, names=[n for n in names if n != "perf_event_open"])
        if not rule["names"]:
            continue
    rules.append(rule)
rules.append({"names": ["perf_event_open"], "action": "SCMP_ACT_ALLOW",
              "includes": {"caps": ["CAP_PERFMON"]}})
prof["syscalls"] = rules
with open(dst, "w") as f:
    json.dump(prof, f, indent=1)
