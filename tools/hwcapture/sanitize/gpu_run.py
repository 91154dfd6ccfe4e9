"""Run every planted kernel under each compute-sanitizer tool (on the GPU machine); writes one log per tool.

    nvcc -arch=sm_90a -ptx -lineinfo planted.cu -o tests/data/sanitize/planted.ptx     # here
    python3 gpu_run.py tests/data/sanitize/planted.ptx tests/data/sanitize/planted.json OUTDIR [TOOL,...]
    python tools/hwcapture/sanitize/verdicts.py OUTDIR tests/data/sanitize/planted_verdicts.json
"""
import os
import re
import subprocess
import sys
import time

TOOLS = {
    "memcheck": ["--tool", "memcheck"],
    "racecheck": ["--tool", "racecheck", "--racecheck-report", "all"],
    "synccheck": ["--tool", "synccheck"],
    "initcheck": ["--tool", "initcheck"],
}


# the kernels that fault (the context cannot go on): only memcheck runs them
FAULTING = ["global_oob_write_bug", "global_oob_read_bug", "shared_oob_write_bug", "global_misaligned_bug",
            "shared_misaligned_bug", "atomic_oob_bug", "vector_misaligned_bug"]
# hangs on the GPU (the wait names a phase that never completes): synccheck stops it, the other tools time out
HANGS = ["mbarrier_overarrive_bug"]


def main():
    ptx, cfg, outdir = sys.argv[1:4]
    import threading
    threads = [threading.Thread(target=run_tool, args=(tool, flags, ptx, cfg, outdir)) for tool, flags in TOOLS.items()]
    for t in threads:
        t.start()
    for t in threads:
        t.join()


def run_tool(tool, flags, ptx, cfg, outdir):
    here = os.path.dirname(os.path.abspath(__file__))
    env = dict(os.environ, PLANTED_SKIP=",".join(([] if tool == "memcheck" else FAULTING) +
                                                 ([] if tool == "synccheck" else HANGS)))
    if len(sys.argv) > 4 and tool not in sys.argv[4].split(","):
        return
    if True:
        log = open(os.path.join(outdir, f"{tool}.log"), "w")
        first = 0
        t0 = time.time()
        while True:
            cmd = ["compute-sanitizer", "--print-limit", "1000000"] + flags + \
                  [sys.executable, os.path.join(here, "host.py"), ptx, cfg, str(first)]
            try:
                p = subprocess.run(cmd, capture_output=True, text=True, timeout=150, env=env)
                text, rc = p.stdout + p.stderr, p.returncode
            except subprocess.TimeoutExpired as e:
                text, rc = (e.stdout or b"").decode(errors="replace") + "\n@@TIMEOUT\n", -9
            log.write(f"@@RUN from {first} rc={rc}\n{text}\n")
            log.flush()
            begun = [int(m) for m in re.findall(r"^@@BEGIN (\d+)", text, re.M)]
            if rc == 0 or not begun:
                break
            first = max(begun) + 1
        print(tool, "done in", round(time.time() - t0, 1), "s", flush=True)


if __name__ == "__main__":
    main()
