// SPDX-License-Identifier: GPL-2.0
/*
 * Names of the module's values, as the tool prints them; also built into the
 * selftests' programs so that every program spells them alike. Unknown values get
 * BUF.
 */
#ifndef NTBSMC_NAMES_H
#define NTBSMC_NAMES_H

#include <stdbool.h>
#include <stddef.h>

/* "handshake", "ntb", "tcp", "listen"; else "unknown(N)". */
const char *mode_name(unsigned int mode, char *buf, size_t size);
/* "peer_no_offer", ...; else "reason_N". */
const char *reason_name(unsigned int reason, char *buf, size_t size);
bool reason_known(unsigned int reason);
/* TCP state as ss(8) prints it ("ESTAB", "LISTEN", ...); else "UNKNOWN(N)". */
const char *tcp_state_name(unsigned int state, char *buf, size_t size);

#endif
