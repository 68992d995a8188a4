"""The seccomp filter bubblewrap loads for the python tool: a classic BPF program, assembled here, that refuses
the kernel surface an interpreter does not need.

Refused with ``EPERM``: the key store (``keyctl``, ``add_key``, ``request_key`` -- so no keyring, the harness's
session keyring included, can be read), ``io_uring``, ``userfaultfd``, ``perf_event_open``, ``bpf``, ``ptrace``
and ``process_vm_readv``/``writev``, every mount call (``mount``, ``umount2``, ``pivot_root`` and the new mount
API), ``unshare`` and ``setns``, ``clone`` with any new-namespace flag, module loading, ``kexec``, ``swapon``,
``reboot``, ``acct``, ``quotactl``, ``syslog`` and file handles (``open_by_handle_at``). ``clone3`` gets
``ENOSYS``, its flags being out of a filter's reach (they sit in memory): the C library then falls back to
``clone``, whose flags are checked. A system call of another ABI (32-bit ``int 0x80`` on x86-64, x32) is refused.

Only x86-64 and AArch64 are described; elsewhere ``program()`` returns ``None`` and the tool says so.
"""

from __future__ import annotations

import errno
import platform
import struct

SECCOMP_RET_ALLOW = 0x7FFF0000
SECCOMP_RET_ERRNO = 0x00050000
BPF_LD_W_ABS = 0x20
BPF_JEQ_K = 0x15
BPF_JGE_K = 0x35
BPF_JSET_K = 0x45
BPF_RET_K = 0x06
NR_OFFSET = 0
ARCH_OFFSET = 4
ARG0_LOW_OFFSET = 16
"""Offsets in ``struct seccomp_data``: the call number, its ABI, the low 32 bits of the first argument."""
X32_BIT = 0x40000000
CLONE_NEW_NAMESPACE_FLAGS = 0x7E020000
"""CLONE_NEWNS | CLONE_NEWCGROUP | CLONE_NEWUTS | CLONE_NEWIPC | CLONE_NEWUSER | CLONE_NEWPID | CLONE_NEWNET."""

SYSTEM_CALLS = """
keyctl 250 219
add_key 248 217
request_key 249 218
io_uring_setup 425 425
io_uring_enter 426 426
io_uring_register 427 427
userfaultfd 323 282
perf_event_open 298 241
bpf 321 280
ptrace 101 117
process_vm_readv 310 270
process_vm_writev 311 271
mount 165 40
umount2 166 39
pivot_root 155 41
fsopen 430 430
fsconfig 431 431
fsmount 432 432
fspick 433 433
move_mount 429 429
open_tree 428 428
mount_setattr 442 442
unshare 272 97
setns 308 268
kexec_load 246 104
kexec_file_load 320 294
init_module 175 105
finit_module 313 273
delete_module 176 106
swapon 167 224
swapoff 168 225
reboot 169 142
acct 163 89
quotactl 179 60
syslog 103 116
open_by_handle_at 304 265
name_to_handle_at 303 264
clone 56 220
clone3 435 435
"""
"""Each refused call (and ``clone``, ``clone3``) with its number on x86-64 and on AArch64 (from the kernel's
``asm/unistd_64.h`` and ``asm-generic/unistd.h``)."""
ARCHITECTURES = {"x86_64": (0, 0xC000003E, True), "aarch64": (1, 0xC00000B7, False)}
"""machine: (column in ``SYSTEM_CALLS``, its AUDIT_ARCH_* value, whether it has x32 call numbers)."""
_ROWS = [line.split() for line in SYSTEM_CALLS.strip().splitlines()]
REFUSED = [name for name, *_ in _ROWS if name not in ("clone", "clone3")]


def call_numbers(machine: str | None = None) -> dict[str, int] | None:
    """Every call in ``SYSTEM_CALLS`` by name, numbered for ``machine`` (``platform.machine()`` by default);
    ``None`` where the machine is not described."""
    described = ARCHITECTURES.get(machine or platform.machine())
    if described is None:
        return None
    return {name: int(values[described[0]]) for name, *values in _ROWS}


def _instruction(code: int, k: int, jump_true: int = 0, jump_false: int = 0) -> bytes:
    return struct.pack("=HBBI", code, jump_true, jump_false, k)


def program(machine: str | None = None) -> bytes | None:
    """The filter for ``machine`` (``platform.machine()`` by default) as the bytes of a ``sock_filter`` array,
    ready for ``bwrap --seccomp FD``; ``None`` where the machine's system call numbers are not described here."""
    numbers = call_numbers(machine)
    if numbers is None:
        return None
    _, audit_arch, has_x32 = ARCHITECTURES[machine or platform.machine()]
    refuse = SECCOMP_RET_ERRNO | errno.EPERM
    # Each check is (opcode, k, target if true); a jump counts the instructions it skips. The targets follow
    # the checks: ALLOW, REFUSE, NOSYS, then the clone flags check.
    checks = [(BPF_JGE_K, X32_BIT, "refuse")] if has_x32 else []
    checks += [(BPF_JEQ_K, numbers[name], "refuse") for name in REFUSED]
    checks += [(BPF_JEQ_K, numbers["clone"], "clone"), (BPF_JEQ_K, numbers["clone3"], "nosys")]
    first_check = 3  # after: load arch, compare arch, load number
    end = first_check + len(checks)
    targets = {"allow": end, "refuse": end + 1, "nosys": end + 2, "clone": end + 3}
    code = [
        _instruction(BPF_LD_W_ABS, ARCH_OFFSET),
        _instruction(BPF_JEQ_K, audit_arch, 0, targets["refuse"] - 2),
        _instruction(BPF_LD_W_ABS, NR_OFFSET),
    ]
    for position, (opcode, k, target) in enumerate(checks, start=first_check):
        code.append(_instruction(opcode, k, targets[target] - position - 1))
    code += [
        _instruction(BPF_RET_K, SECCOMP_RET_ALLOW),
        _instruction(BPF_RET_K, refuse),
        _instruction(BPF_RET_K, SECCOMP_RET_ERRNO | errno.ENOSYS),
        _instruction(BPF_LD_W_ABS, ARG0_LOW_OFFSET),
        _instruction(BPF_JSET_K, CLONE_NEW_NAMESPACE_FLAGS, 1),  # a namespace flag: to REFUSE below
        _instruction(BPF_RET_K, SECCOMP_RET_ALLOW),
        _instruction(BPF_RET_K, refuse),
    ]
    return b"".join(code)
