"""``python -m emulator run`` and ``python -m emulator demo``."""
import os

import numpy as np

from emulator.cli import main

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DEMO = os.path.join(ROOT, "emulator", "demo", "mma_demo.ptx")


def _inputs(tmp_path):
    a = (np.arange(256) * 0.01).astype(np.float16).reshape(16, 16)
    b = (np.arange(128) * 0.01).astype(np.float16).reshape(16, 8)
    np.save(tmp_path / "a.npy", a)
    np.save(tmp_path / "b.npy", b)
    return a, b


def test_run_writes_arrays_back(tmp_path, capsys):
    _inputs(tmp_path)
    rc = main(["run", DEMO, "--kernel", "ptx_mma_global", "--arg", str(tmp_path / "a.npy"), "--arg",
               str(tmp_path / "b.npy"), "--arg", "zeros:f16:128", "--arg", "16", "--arg", "8", "--arg", "16",
               "--out", str(tmp_path / "out")])
    assert rc == 0
    d = np.load(tmp_path / "out" / "arg2.npy")
    demo = np.load(os.path.join(ROOT, "tests", "data", "kernels", "h100_kernels.npz"))
    assert d.view(np.uint16).tolist() == demo["ptx_mma_global_iota__after__c"].view(np.uint16).tolist()
    assert "1 CTA(s)" in capsys.readouterr().out


def test_run_trace_and_bank_report(tmp_path, capsys):
    _inputs(tmp_path)
    rc = main(["run", DEMO, "--kernel", "_Z14ptx_mma_sharedP6__halfS0_S0_iii", "--arg", str(tmp_path / "a.npy"),
               "--arg", str(tmp_path / "b.npy"), "--arg", "zeros:f16:128", "--arg", "16", "--arg", "8",
               "--arg", "16", "--trace", "--bank-report"])
    out = capsys.readouterr().out
    assert rc == 0
    assert "cta(0,0,0) w0 pc   0 lanes 0-31: ld.param.u64" in out
    assert "lanes 0-15: shl.b32" in out or "lanes 0-15: cvt.u32.u64" in out        # the divergent branch
    assert "ldmatrix.sync.aligned.m8n8.x4.shared.b16 {%r15, %r16, %r17, %r18}, [%r19]: wavefronts 8" in out


def test_run_reports_errors_with_exit_code(tmp_path, capsys):
    assert main(["run", DEMO, "--kernel", "nope", "--arg", "1"]) == 1
    assert "no kernel named 'nope'" in capsys.readouterr().err
    assert main(["run", DEMO, "--kernel", "ptx_mma_global", "--arg", "1"]) == 1
    assert "takes 6 argument(s)" in capsys.readouterr().err
    assert main(["run", DEMO, "--kernel", "ptx_mma_global"] + ["--arg", "x"] * 6) == 1
    assert "expected an integer" in capsys.readouterr().err


def test_demo_prints_d_next_to_numpy(capsys):
    assert main(["demo"]) == 0
    out = capsys.readouterr().out
    assert "give bit-identical D" in out
    assert "D equals the D an H100 computed from the same PTX, bit for bit" in out
    assert "  0 |   0.992   1.004" in out and "0.9921" in out


def test_demo_reference_bits_are_the_capture():
    from emulator.cli.run import H100_D
    demo = np.load(os.path.join(ROOT, "tests", "data", "kernels", "h100_kernels.npz"))
    assert H100_D == demo["ptx_mma_shared_iota__after__c"].tobytes()


def test_show_without_what_is_an_error_not_an_exit(capsys):
    assert main(["show"]) == 1
    assert capsys.readouterr().err.startswith("error: show: give WHAT")
