#!/bin/sh
# SPDX-License-Identifier: GPL-2.0
# Writes example.trace, a small hand-made trace in mq_replay's file format (one line per
# epoch, the chunk ids touched in it; '#' comments; "@budget N" sets the resident budget):
#   epochs   0-59  active: hot chunks 0-9 every epoch, plus a loop over chunks 100-129,
#                  ten per epoch (a loop longer than what LRU has left for it: LRU's worst
#                  case); budget 25
#   epochs  60-89  idle: only chunks 0-3 (timers); shrunk to a floor of 8
#   epochs 90-119  awake again, as in the first phase; budget 25
# Deterministic: no randomness, so the file is the same everywhere.
awk 'BEGIN {
	print "# example.trace: written by gen-example.sh; see there"
	print "@budget 25"
	for (e = 0; e < 120; e++) {
		if (e == 60)
			print "@budget 8"
		if (e == 90)
			print "@budget 25"
		line = ""
		if (e >= 60 && e < 90) {
			for (c = 0; c < 4; c++)
				line = line (line == "" ? "" : " ") c
		} else {
			for (c = 0; c < 10; c++)
				line = line (line == "" ? "" : " ") c
			for (c = 0; c < 10; c++)
				line = line " " 100 + (e % 3) * 10 + c
		}
		print line
	}
}' > "$(dirname "$0")/example.trace"
