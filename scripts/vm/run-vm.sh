#!/bin/bash
# SPDX-License-Identifier: MIT
#
# Boot the installed Debian kernel under QEMU (q35, TCG by default) with an
# initramfs built by mkinitramfs.sh, run a test script inside the guest and
# report its exit status. Guest RAM is a shared memory file and a board is
# an ivshmem device, so that a host process (the emulator daemon) can see
# both: ivshmem-plain backed by another file (the daemon polls), or
# ivshmem-doorbell whose server is the daemon (doorbells and MSI-X).
#
# usage: run-vm.sh [options] [--] TEST_SCRIPT [ARGS...]
#   --kver KVER       guest kernel release (default: the newest one with both
#                     /boot/vmlinuz-KVER and /lib/modules/KVER)
#   --kernel PATH     kernel image (default /boot/vmlinuz-KVER); a bzImage is
#                     unpacked once into build/vm/ (FCVM_CACHE) and started
#                     at its PVH entry, which saves ~6 s of TCG boot time
#   --no-pvh          boot the bzImage as it is
#   --kmod NAME, --module KO, --prog PATH, --lib PATH, --file SRC:DST
#                     put into the initramfs (see mkinitramfs.sh)
#   --bar FILE        ivshmem-plain backing file; created (zeroed) if missing,
#                     kept afterwards (default: a private file, removed)
#   --bar-size SIZE   ivshmem-plain size, a power of 2 (default 2M)
#   --no-ivshmem      no ivshmem-plain device (the default with --board-socket,
#                     unless --bar is given too)
#   --board-socket PATH
#                     an ivshmem-doorbell device (4 vectors, MSI-X) whose
#                     server listens at PATH: the emulator daemon with
#                     --socket PATH. Repeatable: one board per socket, in
#                     PCI slot order (00:01.0, 00:02.0, ...). QEMU starts
#                     once every socket exists (see --board-wait)
#   --board-cmd CMD   run CMD (sh -c) as the server of the Nth --board-socket
#                     (the Nth --board-cmd), like --host-cmd, with
#                     FCVM_SOCKET (its socket, removed first if stale),
#                     FCVM_BOARD (N, from 0), FCVM_RAM and FCVM_RAM_SIZE set;
#                     its output: board-N.log. A socket with no --board-cmd
#                     is made by --host-cmd (FCVM_SOCKETS lists them all),
#                     or must exist already when there is no --host-cmd
#   --board-wait SEC  how long to wait for the sockets (default 10)
#   --root-port       put each --board-socket board behind a PCIe root port
#                     of its own (bus N+1), as a card in a slot is: a bus
#                     reset through sysfs and AER (aer_inject on the port)
#                     then reach it; without it boards sit on the root bus
#   --ram FILE        guest RAM backing file (default: private, removed)
#   --host-cmd CMD    run CMD (sh -c) in the background from just before the
#                     VM starts until it ends, e.g. the emulator daemon, with
#                     FCVM_BAR, FCVM_BAR_SIZE, FCVM_RAM, FCVM_RAM_SIZE and
#                     FCVM_SOCKETS set (the files exist already); its
#                     output: host.log
#   --mem SIZE        guest RAM (default 256M; keep it under 2G so that guest
#                     physical addresses are offsets into the RAM file)
#   --smp N           guest CPUs (default 1)
#   --accel ACCEL     QEMU accelerator (default tcg; FCVM_ACCEL overrides)
#   --timeout SEC     kill the VM after SEC seconds (default 120)
#   --append ARGS     more kernel command line
#   --logdir DIR      keep console.log, output.log (the test's), qemu.log,
#                     host.log, board-N.log and result there (default: a temporary
#                     directory, removed when the run passed); result holds
#                     the lines guest=STATUS|none kernel=clean|dirty
#                     boards=ok|died host=ok|ended|none timeout=0|1
#                     status=STATUS secs=S
#   -v, --verbose     print the kernel console log too
#
# Exit status: the guest test's status (0 pass, 77 skip, other fail) when the
# kernel is clean; 1 if the kernel log shows BUG:, WARNING:, Oops and the
# like, or the kernel is tainted by more than an unsigned out-of-tree module,
# or the test gave no status, or a board server did not come up; 124 on
# timeout; 2 on usage errors.
set -euo pipefail
# The RAM and BAR files hold the guest's memory: ours only (emud insists).
umask 077

here=$(cd "$(dirname "$0")" && pwd)
prog=${0##*/}

die() { echo "$prog: $*" >&2; exit 2; }

host_cmd='' kver='' kernel='' pvh=1 bar='' bar_size=2M ivshmem='' ram='' mem=256M smp=1
accel=${FCVM_ACCEL:-tcg} timeout=120 append='' logdir='' verbose=0 board_wait=10
root_port=0
initrd_args=() board_sockets=() board_cmds=()
while [ $# -gt 0 ]; do
	case $1 in
	--kver) kver=$2; shift 2 ;;
	--kernel) kernel=$2; shift 2 ;;
	--no-pvh) pvh=0; shift ;;
	--kmod|--module|--prog|--lib|--file) initrd_args+=("$1" "$2"); shift 2 ;;
	--bar) bar=$2; shift 2 ;;
	--bar-size) bar_size=$2; shift 2 ;;
	--no-ivshmem) ivshmem=0; shift ;;
	--board-socket) board_sockets+=("$2"); shift 2 ;;
	--board-cmd) board_cmds+=("$2"); shift 2 ;;
	--board-wait) board_wait=$2; shift 2 ;;
	--root-port) root_port=1; shift ;;
	--ram) ram=$2; shift 2 ;;
	--host-cmd) host_cmd=$2; shift 2 ;;
	--mem) mem=$2; shift 2 ;;
	--smp) smp=$2; shift 2 ;;
	--accel) accel=$2; shift 2 ;;
	--timeout) timeout=$2; shift 2 ;;
	--append) append=$2; shift 2 ;;
	--logdir) logdir=$2; shift 2 ;;
	-v|--verbose) verbose=1; shift ;;
	-h|--help) sed -n '3,/^set -euo/p' "$0" | sed -e '$d' -e 's/^# \{0,1\}//'; exit 0 ;;
	--) shift; break ;;
	-*) die "unknown option $1" ;;
	*) break ;;
	esac
done
[ $# -ge 1 ] || die "a test script is required (see --help)"
((${#board_cmds[@]} <= ${#board_sockets[@]})) ||
	die "${#board_cmds[@]} --board-cmd but only ${#board_sockets[@]} --board-socket"
for s in "${board_sockets[@]}"; do
	case $s in
	*,*) die "--board-socket $s: QEMU options cannot hold a comma" ;;
	esac
done
# The plain device: by default only when there is no doorbell board.
if [ -z "$ivshmem" ]; then
	if [ ${#board_sockets[@]} = 0 ] || [ -n "$bar" ]; then
		ivshmem=1
	else
		ivshmem=0
	fi
fi

qemu=$(command -v qemu-system-x86_64) ||
	die "qemu-system-x86_64 not found; install it: apt-get install qemu-system-x86"

# The guest kernel: the newest with both an image and its modules.
if [ -z "$kver" ]; then
	for k in $(ls /boot/ 2>/dev/null | sed -n 's/^vmlinuz-//p' | sort -rV); do
		if [ -d "/lib/modules/$k/kernel" ]; then
			kver=$k
			break
		fi
	done
	[ -n "$kver" ] || die "no kernel with /boot/vmlinuz-KVER and /lib/modules/KVER;" \
		"install one: apt-get install linux-image-amd64"
fi
kernel=${kernel:-/boot/vmlinuz-$kver}
[ -r "$kernel" ] || die "cannot read kernel image $kernel"

# Unpacked once per kernel image; a bzImage without a PVH entry boots as is.
boot_kernel=$kernel
if [ "$pvh" = 1 ]; then
	cache=${FCVM_CACHE:-$here/../../build/vm}
	elf=$cache/$(basename "$kernel").pvh
	if [ ! -s "$elf" ] || [ "$kernel" -nt "$elf" ]; then
		mkdir -p "$cache"
		if ! "$here/extract-vmlinux.sh" "$kernel" "$elf"; then
			echo "$prog: note: no PVH kernel in $kernel, booting it as is (slower)" >&2
			elf=
		fi
	fi
	boot_kernel=${elf:-$kernel}
fi

# Sizes like 2M, 256M, 1G to bytes.
to_bytes() {
	local n=${1%[KkMmGg]} u=${1#"${1%[KkMmGg]}"}
	case $u in
	K|k) echo $((n << 10)) ;;
	M|m) echo $((n << 20)) ;;
	G|g) echo $((n << 30)) ;;
	*) echo "$n" ;;
	esac
}
bar_bytes=$(to_bytes "$bar_size")
mem_bytes=$(to_bytes "$mem")
((bar_bytes > 0 && (bar_bytes & (bar_bytes - 1)) == 0)) ||
	die "--bar-size must be a power of 2, got $bar_size"

work=$(mktemp -d "${TMPDIR:-/tmp}/fcvm.XXXXXX")
status=1
if [ -z "$logdir" ]; then
	logdir=$work
else
	mkdir -p "$logdir"
fi
console=$logdir/console.log
output=$logdir/output.log
rm -f "$console" "$output" "$logdir/qemu.log"

shm=${FCVM_SHM:-/dev/shm}
own_ram=0 own_bar=0 host_pid='' board_pids=()
if [ -z "$ram" ]; then
	ram=$shm/fcvm-$$-ram
	own_ram=1
fi
if [ "$ivshmem" = 1 ] && [ -z "$bar" ]; then
	bar=$shm/fcvm-$$-bar
	own_bar=1
fi
ran=0
# The host command runs in its own process group, ended as a whole.
stop_host() {
	if [ -n "$host_pid" ]; then
		kill -TERM -- "-$host_pid" 2>/dev/null || kill "$host_pid" 2>/dev/null || true
		wait "$host_pid" 2>/dev/null || true
		host_pid=''
	fi
}
stop_boards() {
	local pid
	for pid in "${board_pids[@]}"; do
		kill -TERM -- "-$pid" 2>/dev/null || kill "$pid" 2>/dev/null || true
	done
	for pid in "${board_pids[@]}"; do
		wait "$pid" 2>/dev/null || true
	done
	board_pids=()
}
# shellcheck disable=SC2317 # run by the EXIT trap
cleanup() {
	stop_host
	stop_boards
	[ "$own_ram" = 1 ] && rm -f "$ram"
	[ "$own_bar" = 1 ] && rm -f "$bar"
	rm -f "$work/initramfs.cpio"
	# Keep a failed run's logs; a passed run's only when asked to (then
	# they are in --logdir, and nothing of ours is left in $work).
	if [ "$logdir" != "$work" ] || [ "$ran" = 0 ] || [ "$status" = 0 ] ||
	   [ "$status" = 77 ]; then
		rm -rf "$work"
	fi
	return 0
}
trap cleanup EXIT

initrd=$work/initramfs.cpio
"$here/mkinitramfs.sh" -o "$initrd" -k "$kver" "${initrd_args[@]}" -- "$@"

# shellcheck disable=SC2054 # commas are QEMU's
qargs=(
	-accel "$accel" -cpu max -smp "$smp"
	-machine q35,memory-backend=ram -m "$mem"
	-object "memory-backend-file,id=ram,size=$mem_bytes,mem-path=$ram,share=on"
	-nodefaults -no-user-config -display none -no-reboot
	-serial "file:$console" -serial "file:$output"
	-kernel "$boot_kernel" -initrd "$initrd"
	-append "console=ttyS0,115200 panic=-1 mitigations=off i8042.noaux i8042.nokbd $append"
)
if [ "$ivshmem" = 1 ]; then
	if [ ! -e "$bar" ]; then
		truncate -s "$bar_bytes" "$bar"
	fi
	actual=$(stat -c %s "$bar")
	[ "$actual" = "$bar_bytes" ] ||
		die "$bar is $actual bytes, not $bar_size; remove it or pass --bar-size"
	# shellcheck disable=SC2054
	qargs+=(
		-object "memory-backend-file,id=fcbar,size=$bar_bytes,mem-path=$bar,share=on"
		-device ivshmem-plain,memdev=fcbar
	)
fi
i=0
for s in "${board_sockets[@]}"; do
	bus=''
	if [ "$root_port" = 1 ]; then
		# shellcheck disable=SC2054
		qargs+=(-device "pcie-root-port,id=fcrp$i,chassis=$((i + 1)),slot=$((i + 1))")
		bus=",bus=fcrp$i"
	fi
	# shellcheck disable=SC2054
	qargs+=(
		-chardev "socket,path=$s,id=fcboard$i"
		-device "ivshmem-doorbell,chardev=fcboard$i,vectors=4$bus"
	)
	i=$((i + 1))
done

# Created here rather than by QEMU, so that a host process can map it first.
if [ ! -e "$ram" ]; then
	truncate -s "$mem_bytes" "$ram"
fi

# Sockets that our own commands serve: a stale file would let QEMU start
# before the server listens, so it goes.
i=0
for s in "${board_sockets[@]}"; do
	if [ "$i" -lt ${#board_cmds[@]} ] || [ -n "$host_cmd" ]; then
		rm -f "$s"
	fi
	i=$((i + 1))
done
if [ "$ivshmem" = 0 ]; then
	bar='' bar_bytes=0
fi
if [ -n "$host_cmd" ]; then
	FCVM_BAR=${bar:-} FCVM_BAR_SIZE=$bar_bytes FCVM_RAM=$ram \
		FCVM_RAM_SIZE=$mem_bytes FCVM_SOCKETS="${board_sockets[*]}" \
		setsid sh -c "$host_cmd" < /dev/null > "$logdir/host.log" 2>&1 &
	host_pid=$!
fi
i=0
for cmd in "${board_cmds[@]}"; do
	FCVM_SOCKET=${board_sockets[$i]} FCVM_BOARD=$i FCVM_RAM=$ram \
		FCVM_RAM_SIZE=$mem_bytes setsid sh -c "$cmd" \
		< /dev/null > "$logdir/board-$i.log" 2>&1 &
	board_pids+=($!)
	i=$((i + 1))
done

# QEMU connects to each socket once, at start: wait for all of them (a
# server makes its socket appear only once it listens), polling gently.
if [ ${#board_sockets[@]} -gt 0 ]; then
	deadline=$(($(date +%s) + board_wait))
	i=0
	for s in "${board_sockets[@]}"; do
		while [ ! -S "$s" ]; do
			gone=''
			if [ "$i" -lt ${#board_pids[@]} ] &&
			   ! kill -0 "${board_pids[$i]}" 2>/dev/null; then
				gone="its --board-cmd ended (board-$i.log follows)"
			elif [ "$i" -ge ${#board_pids[@]} ] && [ -n "$host_pid" ] &&
			     ! kill -0 "$host_pid" 2>/dev/null; then
				gone="the --host-cmd ended (host.log follows)"
			elif [ -z "$host_cmd" ] && [ "$i" -ge ${#board_cmds[@]} ]; then
				gone="it does not exist and no command of ours makes it"
			elif [ "$(date +%s)" -ge "$deadline" ]; then
				gone="not there after ${board_wait}s"
			fi
			if [ -n "$gone" ]; then
				echo "$prog: FAIL: board $i socket $s: $gone" >&2
				if [ "$i" -lt ${#board_pids[@]} ]; then
					sed 's/^/  /' "$logdir/board-$i.log" >&2
				elif [ -n "$host_cmd" ]; then
					sed 's/^/  /' "$logdir/host.log" >&2
				fi
				exit 1
			fi
			sleep 0.05
		done
		i=$((i + 1))
	done
fi

start=$(date +%s.%N)
set +e
timeout -k 5 "$timeout" "$qemu" "${qargs[@]}" < /dev/null > "$logdir/qemu.log" 2>&1
qrc=$?
ran=1
host_state=none
if [ -n "$host_pid" ]; then
	host_state=ok
	if ! kill -0 "$host_pid" 2>/dev/null; then
		echo "$prog: note: the host command ended before the VM did" >&2
		host_state=ended
	fi
	stop_host
fi
boards_died=''
i=0
for pid in "${board_pids[@]}"; do
	if ! kill -0 "$pid" 2>/dev/null; then
		echo "$prog: FAIL: board $i's server ended before the VM did" \
			"(board-$i.log follows)" >&2
		sed 's/^/  /' "$logdir/board-$i.log" >&2
		boards_died=1
	fi
	i=$((i + 1))
done
stop_boards
set -e
end=$(date +%s.%N)
secs=$(awk -v a="$start" -v b="$end" 'BEGIN { printf "%.1f", b - a }')

touch "$console" "$output"
tr -d '\r' < "$output" | grep -v '^FCVM-\(EXIT\|TAINT\) ' || true
if [ "$verbose" = 1 ]; then
	echo "---- kernel console ----"
	tr -d '\r' < "$console"
	echo "------------------------"
fi

guest=$(tr -d '\r' < "$output" | sed -n 's/^FCVM-EXIT \([0-9]*\)$/\1/p' | tail -n 1)
bad=$(tr -d '\r' < "$console" |
	grep -E 'BUG:|\] BUG |WARNING:|Oops|Kernel panic|Call Trace:|general protection fault|UBSAN:|KASAN:' |
	head -n 20 || true)
# Taint flags other than O (out-of-tree module, 4096) and E (unsigned, 8192).
taint=$(tr -d '\r' < "$output" | sed -n 's/^FCVM-TAINT \([0-9]*\)$/\1/p' | tail -n 1)
if [ -n "$taint" ] && (( taint & ~(4096 | 8192) )); then
	bad="${bad:+$bad
}kernel tainted: /proc/sys/kernel/tainted is $taint (see Documentation/admin-guide/tainted-kernels.rst)"
fi

if [ "$qrc" = 124 ] || [ "$qrc" = 137 ]; then
	echo "$prog: FAIL: timed out after ${timeout}s" >&2
	status=124
elif [ -z "$guest" ]; then
	echo "$prog: FAIL: the guest gave no exit status (qemu exit $qrc)" >&2
	status=1
elif [ -n "$bad" ] || [ -n "$boards_died" ]; then
	status=1
else
	status=$guest
fi
if [ -n "$bad" ]; then
	echo "$prog: FAIL: the kernel log is not clean:" >&2
	echo "$bad" >&2
fi
if [ "$status" != 0 ] && [ "$status" != 77 ]; then
	[ -s "$logdir/qemu.log" ] && sed 's/^/qemu: /' "$logdir/qemu.log" >&2
	if [ "$verbose" = 0 ]; then
		echo "---- last lines of the kernel console ----" >&2
		tr -d '\r' < "$console" | tail -n 40 >&2
	fi
fi
cat > "$logdir/result" <<EOF
guest=${guest:-none}
kernel=$([ -z "$bad" ] && echo clean || echo dirty)
boards=$([ -z "$boards_died" ] && echo ok || echo died)
host=$host_state
timeout=$([ "$status" = 124 ] && echo 1 || echo 0)
status=$status
secs=$secs
EOF
where="logs in $logdir"
if [ "$logdir" = "$work" ] && { [ "$status" = 0 ] || [ "$status" = 77 ]; }; then
	where="--logdir DIR keeps the logs"
fi
echo "$prog: guest exit ${guest:-none}, status $status, ${secs}s; $where" >&2
exit "$status"
