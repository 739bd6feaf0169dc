# The fork-storm workload's figures, for record_forkstorm and
# bench_forkstorm; source it after common.sh.
#
# storm_share FOLDED: "named total" over the children's samples. A child is
# comm storm-child, or a sample taken before its prctl() was read (comm still
# forkstorm) that is in storm_* code or whose leaf is unmapped (counted as
# the child's, against the share).
storm_share() {
	python3 - "$1" <<'PY'
import re, sys
named = total = 0
for line in open(sys.argv[1]):
    stack, _, count = line.rstrip("\n").rpartition(" ")
    f = stack.split(";")
    leaf = f[-1]
    unnamed = leaf.startswith("[unmapped]") or re.search(r"\+0x[0-9a-f]+$", leaf) is not None
    child = f[0] == "storm-child" or (f[0] == "forkstorm" and
                                      (unnamed or any(x.startswith("storm_") for x in f)))
    if not child:
        continue
    total += int(count)
    if not unnamed:
        named += int(count)
print(named, total)
PY
}
