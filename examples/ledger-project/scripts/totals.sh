#!/bin/sh
# totals per account
awk -F, 'NR>1 {d[$1]+=$3; c[$1]+=$4} END {for (a in d) print a, d[a], c[a]}' data/journal.csv
