#!/bin/bash
# SPDX-License-Identifier: GPL-2.0
# When ntbsmc cannot be used, the connection stays TCP, byte-exact, with a reason;
# when a peer misbehaves in the handshake, the connection falls back or is reset
# within a bound:
#   - Linux SMC (AF_SMC) server or client against an ntbsmc peer
#   - malformed handshakes (fault points clc_truncated, clc_garbage,
#     clc_oversized, server_hello_delay: a server that answers too late)
#   - a server of another protocol version (server_version): both fall back,
#     reason version, bytes intact
#   - versions 6 and 7 (Documentation/switch.md): two ends of version 7 agree
#     on it and keep the copy a switch of transport needs (can_switch); an end
#     with sysctl switch=0 speaks version 6 only, and the connection runs over
#     NTB as version 6 (no switch), from either side; bytes intact
#   - a server whose NTB device is disabled: reason dev_disabled, bytes intact
# (A misbehaving peer after the handshake, and the link going down under a
# connection: ulp/hostile.sh.)
source "$REPO/selftests/lib.sh"
source "$REPO/selftests/ulp/lib.sh"

setup() {
	ulp_setup
	load_module smc
}
cleanup() {
	fault_clear
	ulp_cleanup
	unload_module smc
}

test_phases setup cleanup "$@"

need_faults
ulp_wait_active
port=6100
sget T_MS net.ntbsmc.handshake_timeout_ms

# Linux SMC peers: both ends end on TCP with the application's bytes intact, both
# directions. A Linux SMC server never answers our HELLO, so the ntbsmc client
# falls back on its timeout unless the server spoke first.
xfer_one smc_server "--smc" "--ulp --bytes 300000 --both"
check "smc_server: not intact" [ "${O[intact]-missing}" = true ]
if [ "$ROLE" = b ]; then
	r=${O[mode]-missing}/${O[reason]-missing}
	check "smc_server: client $r, want tcp/timeout or tcp/peer_smc" \
		one_of "$r" tcp/timeout tcp/peer_smc
fi
xfer_one smc_client "--ulp" "--smc --bytes 300000 --both"
check "smc_client: not intact" [ "${O[intact]-missing}" = true ]
if [ "$ROLE" = a ]; then
	check "smc_client: server mode ${O[mode]-missing} reason ${O[reason]-missing}" \
		[ "${O[mode]-missing}/${O[reason]-missing}" = tcp/peer_smc ]
fi

# Malformed handshakes from host a's kernel (in the one-VM topology both hosts
# share the kernel, so both misbehave): fallback with intact bytes or a reset,
# within three handshake timeouts, never a hang.
for f in clc_truncated clc_garbage clc_oversized server_hello_delay; do
	[ "$ROLE" = a ] && fault_set $f -1 $((T_MS + 100))
	barrier "fault$f-set"
	xfer_one "fault$f" "--ulp --allow-reset" "--ulp --allow-reset --bytes 100000 --both"
	o=${O[outcome]-missing}
	if [ "$o" = ok ]; then
		check "fault$f: fell back but not intact" [ "${O[intact]-missing}" = true ]
		check "fault$f: mode ${O[mode]-missing}" [ "${O[mode]-missing}" = tcp ]
	else
		check "fault$f: outcome $o" [ "$o" = reset ]
		secs=${O[secs]-missing}
		if [[ $secs =~ ^[0-9]+\.[0-9]{3}$ ]]; then
			ms=$((10#${secs/./}))	# "%.3f" seconds
			check "fault$f: reset after $ms ms (bound $((3 * T_MS)))" \
				[ "$ms" -le $((3 * T_MS + 2000)) ]
		else
			check "fault$f: no time in $out" false
		fi
	fi
	[ "$ROLE" = a ] && fault_clear $f
	barrier "fault$f-clear"
done
[ "$ROLE" = a ] && check "malformed handshakes: no handshake error counted" \
	[ "$(jfield "$(cli -j stats)" handshake_errors)" -gt 0 ]

# Host a's server offers only the protocol version after ours: the client
# declines with reason version, the server falls back as declined by it.
[ "$ROLE" = a ] && fault_set server_version
barrier version-set
xfer_one version "--ulp" "--ulp --bytes 300000 --both"
[ "$ROLE" = a ] && want=tcp/declined/version || want=tcp/version/none
got=${O[mode]-missing}/${O[reason]-missing}/${O[peer_reason]-missing}
check "version: $got, want $want" [ "$got" = "$want" ]
check "version: not intact" [ "${O[intact]-missing}" = true ]
[ "$ROLE" = a ] && fault_clear server_version
barrier version-clear

# Versions 7 and 6: the highest both speak; NTB either way.
for v in 7:7 a6:6 b6:6; do
	who=${v%%:*} want=${v#*:}
	[ "$who" = "$ROLE"6 ] && sctl net.ntbsmc.switch=0
	barrier "v$who-set"
	xfer_one "v$who" "--ulp" "--ulp --bytes 3000000 --both"
	[ "$want" = 7 ] && sw=true || sw=false
	got=${O[mode]-missing}/${O[version]-missing}/${O[can_switch]-missing}
	check "v$who: $got, want ntb/$want/$sw" [ "$got" = "ntb/$want/$sw" ]
	check "v$who: not intact" [ "${O[intact]-missing}" = true ]
	sctl net.ntbsmc.switch=1
done

# Host a's NTB device is disabled (its link stays up): its server declines the
# client's proposal naming that, dev_disabled (auth before, as for a forger).
[ "$ROLE" = a ] && run cli dev set "$NTB" disable
barrier disabled-set
xfer_one dev_disabled "--ulp" "--ulp --bytes 300000 --both"
[ "$ROLE" = a ] && want=tcp/dev_disabled/none || want=tcp/declined/dev_disabled
got=${O[mode]-missing}/${O[reason]-missing}/${O[peer_reason]-missing}
check "dev_disabled: $got, want $want" [ "$got" = "$want" ]
check "dev_disabled: not intact" [ "${O[intact]-missing}" = true ]
[ "$ROLE" = a ] && run cli dev set "$NTB" enable
barrier disabled-clear

checked
