"""The machine: warps (lanes, registers, predicates), CTAs (shared memory, barriers, the warp scheduler),
compiled programs, loaded modules and their launches.

``warp``         one warp: registers, shared memory, ``Warp.run`` for inline-asm text;
``program``      a PTX function body compiled to flat code (labels, calls, barriers, .param/.local layout);
``kernel_warp``  a warp inside a CTA: per-lane PCs and call stacks, .local/.param spaces;
``cta``          one CTA: its warps, barriers and scheduler;
``module``       ``load_ptx`` and ``Module.launch`` (the grid loop, parameters, module variables);
``result``       ``LaunchResult``;  ``printf``: CUDA's printf formatting.
"""
