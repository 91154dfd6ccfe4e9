"""Compare the emulator's profile of the corpus cases in tests/data/profile/h100_ncu.json with Nsight Compute.

    python tools/hwcapture/profile/compare.py          (prints the per-line tables and the summary of docs/profile.md)
"""
import json
import os
import sys

ROOT = os.path.dirname(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))))
sys.path[:0] = [ROOT, os.path.join(ROOT, "tests")]
KEYS = ("instructions", "smem_wavefronts", "global_sectors")


def emulate(name):
    import corpus_lib
    cases = corpus_lib.load_all()
    got, res, _ = corpus_lib.replay(cases[name], profile=True)
    assert not corpus_lib.mismatches(cases[name], got), name
    return res.profile


def per_line(prof):
    return {r.where: r for r in prof.sources(inlined=True) if r.where != "?"}


def main():
    data = json.load(open(os.path.join(ROOT, "tests", "data", "profile", "h100_ncu.json")))
    summary = []
    for name, hw in data["cases"].items():
        prof = emulate(name)
        em = per_line(prof)
        print(f"\n{name}\n{'line':>24} {'instr PTX':>9} {'SASS':>6} {'smem wf emu':>11} {'ncu':>5} "
              f"{'sectors emu':>11} {'ncu':>5}")
        same_wf = same_sec = n = 0
        for where in sorted(set(em) | set(hw["lines"]), key=lambda k: (k.split(":")[0], int(k.split(":")[1]))):
            e, h = em.get(where), hw["lines"].get(where, {})
            ev = (e.instructions, e.smem_wavefronts, e.global_sectors) if e else (0, 0, 0)
            hv = tuple(h.get(k, 0) for k in KEYS)
            n += 1
            same_wf += ev[1] == hv[1]
            same_sec += ev[2] == hv[2]
            flag = "" if ev[1:] == hv[1:] else "   <-"
            print(f"{where[-24:]:>24} {ev[0]:>9} {hv[0]:>6} {ev[1]:>11} {hv[1]:>5} {ev[2]:>11} {hv[2]:>5}{flag}")
        t = prof.totals()
        tot = hw["totals"]
        summary.append((name, n, same_wf, same_sec, t.instructions, tot["smsp__inst_executed"],
                        t.smem_wavefronts, tot["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld"] +
                        tot["l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st"],
                        t.smem_conflicts, tot["l1tex__data_bank_conflicts_pipe_lsu_mem_shared"], t.global_sectors,
                        tot["l1tex__t_sectors_pipe_lsu_mem_global_op_ld"] +
                        tot["l1tex__t_sectors_pipe_lsu_mem_global_op_st"]))
    print("\n| case | lines | smem wavefronts equal | global sectors equal | warp-instr. PTX / SASS | "
          "smem wavefronts (ld+st) emu / ncu | bank conflicts emu / ncu | global sectors (ld+st) emu / ncu |")
    print("|---|---|---|---|---|---|---|---|")
    for s in summary:
        print(f"| `{s[0]}` | {s[1]} | {s[2]} | {s[3]} | {s[4]} / {s[5]} | {s[6]} / {s[7]} | {s[8]} / {s[9]} | "
              f"{s[10]} / {s[11]} |")


if __name__ == "__main__":
    main()
