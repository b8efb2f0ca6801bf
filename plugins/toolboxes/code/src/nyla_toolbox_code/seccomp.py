"""The sandbox's seccomp filter, compiled by libseccomp (Debian's ``python3-seccomp``, used
through the system's Python, which it is built for) and handed to ``bwrap --seccomp``.

The filter lets everything through except the system calls a Python program has no business
making and that widen the kernel's attack surface: tracing other processes, kernel keyrings,
BPF, perf events, userfaultfd, io_uring, modules, mounts and namespaces, and sockets of any
family but Unix (the network namespace already has no network). Where libseccomp is missing
the sandbox runs without the filter (namespaces and limits still hold) and says so.
"""

from __future__ import annotations

import functools
import os
import subprocess

#: the interpreter python3-seccomp is built for
SYSTEM_PYTHON = "/usr/bin/python3"
DENIED = [
    "ptrace",
    "process_vm_readv",
    "process_vm_writev",
    "keyctl",
    "add_key",
    "request_key",
    "bpf",
    "perf_event_open",
    "userfaultfd",
    "io_uring_setup",
    "io_uring_enter",
    "io_uring_register",
    "kexec_load",
    "kexec_file_load",
    "init_module",
    "finit_module",
    "delete_module",
    "mount",
    "umount2",
    "pivot_root",
    "unshare",
    "setns",
    "open_by_handle_at",
    "name_to_handle_at",
    "syslog",
    "acct",
    "swapon",
    "swapoff",
    "reboot",
    "quotactl",
    "fsopen",
    "fsmount",
    "fspick",
    "move_mount",
    "open_tree",
]
COMPILE = """
import errno, socket, sys
import seccomp
f = seccomp.SyscallFilter(defaction=seccomp.ALLOW)
for name in sys.argv[1:]:
    try:
        f.add_rule(seccomp.ERRNO(errno.EPERM), name)
    except (RuntimeError, ValueError):
        pass  # not a system call on this architecture
f.add_rule(seccomp.ERRNO(errno.EAFNOSUPPORT), "socket", seccomp.Arg(0, seccomp.NE, socket.AF_UNIX))
f.export_bpf(sys.stdout)
"""


@functools.cache
def compiled_filter() -> bytes | None:
    """The filter as BPF, or ``None`` where libseccomp cannot be had."""
    if not os.access(SYSTEM_PYTHON, os.X_OK):
        return None
    try:
        done = subprocess.run(
            [SYSTEM_PYTHON, "-I", "-c", COMPILE, *DENIED],
            capture_output=True,
            timeout=20,
            env={"PATH": "/usr/bin:/bin"},
        )
    except (OSError, subprocess.SubprocessError):
        return None
    if done.returncode != 0 or not done.stdout or len(done.stdout) % 8:
        return None
    return done.stdout
