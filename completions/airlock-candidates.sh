# The completion's candidates, shared by bash (airlock.bash) and zsh
# (_airlock.zsh): make joins each wrapper to this file.  Verbs, subcommands
# and flags are read from airlock's own --help (always the installed
# binary's); project names, run and draft ids from the home or server the
# command line names (--home, --server, --tenant).  Written for bash and for
# zsh in ksh emulation (0-based arrays): no "path" or "words" variables,
# which zsh keeps for itself.

# _airlock_help WORD...: the help of that command path
_airlock_help() {
	command airlock "${_airlock_global[@]}" "$@" --help 2>/dev/null
}

# _airlock_subs HELP: the names listed under "commands:" or "subcommands:"
_airlock_subs() {
	printf '%s\n' "$1" | awk '/^(sub)?commands:$/ { on = 1; next }
		on && /^  [a-z]/ { print $1; next } on { exit }'
}

_airlock_projects() {
	command airlock "${_airlock_global[@]}" project list 2>/dev/null | awk '{ print $1 }'
}

# runs and drafts of every project, full ids (a pipe gets full ids), and @
_airlock_ids() {
	local p
	echo @
	for p in $(_airlock_projects); do
		command airlock "${_airlock_global[@]}" runs "$p" 2>/dev/null |
			awk '$1 ~ /^r[0-9a-f]+$/ { print $1 } $2 ~ /^d[0-9a-f]+$/ { print $2 }'
		command airlock "${_airlock_global[@]}" draft list "$p" 2>/dev/null |
			awk '$1 ~ /^d[0-9a-f]+$/ { print $1 }'
	done | sort -u
}

# _airlock_candidates WORD...: what may follow airlock WORD... (the words
# typed so far, the one being completed last), one a line
_airlock_candidates() {
	[ -n "${ZSH_VERSION-}" ] && emulate -L ksh
	local n=$# i=1 w prev help
	local -a cmdpath _w
	_airlock_global=()
	_w=("$@")
	local cur=${_w[n - 1]}
	# global options before the verb
	while [ $i -lt "$n" ]; do
		w=${_w[i - 1]}
		case $w in
		--home | --tenant | --server | --ca-cert)
			[ $((i + 1)) -le "$n" ] && _airlock_global+=("$w" "${_w[i]}")
			i=$((i + 2)) ;;
		--home=* | --tenant=* | --server=* | --ca-cert=*) _airlock_global+=("$w"); i=$((i + 1)) ;;
		-*) i=$((i + 1)) ;;
		*) break ;;
		esac
	done
	if [ $i -ge "$n" ]; then # the verb itself (or a global option)
		case $cur in
		-*) _airlock_help | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u ;;
		*) _airlock_subs "$(_airlock_help)" ;;
		esac
		return
	fi
	# the command path: the verb and as many subcommands as its help lists
	cmdpath=("${_w[i - 1]}")
	i=$((i + 1))
	help=$(_airlock_help "${cmdpath[@]}")
	while [ $i -lt "$n" ] && _airlock_subs "$help" | grep -qx -- "${_w[i - 1]}"; do
		cmdpath+=("${_w[i - 1]}")
		i=$((i + 1))
		help=$(_airlock_help "${cmdpath[@]}")
	done
	case "${cmdpath[*]}" in # named in a usage line only
	run | audit | gc) [ $i -lt "$n" ] && case "${cmdpath[0]} ${_w[i - 1]}" in
		"run show" | "audit show" | "audit checkpoint" | "audit export" | "audit verify" | \
			"audit pubkey" | "audit prove" | "gc retention")
			cmdpath+=("${_w[i - 1]}"); i=$((i + 1)); help=$(_airlock_help "${cmdpath[@]}") ;;
		esac ;;
	esac
	if [ $i -ge "$n" ] && _airlock_subs "$help" | grep -q .; then
		_airlock_subs "$help" # a subcommand is expected
		return
	fi
	case $cur in
	-*) printf '%s\n' "$help" | grep -oE -- '--[a-z][a-z0-9-]*' | sort -u; return ;;
	esac
	prev=${_w[n - 2]}
	case $prev in
	--project | --base) _airlock_projects; return ;;
	--role) printf '%s\n' admin author reviewer agent; return ;;
	--strategy) printf '%s\n' strict rebase_if_disjoint conflict_copy merge_lines; return ;;
	--network) printf '%s\n' none egress; return ;;
	--backend) printf '%s\n' ns vm; return ;;
	--color) printf '%s\n' auto always never; return ;;
	--kind)
		printf '%s\n' "$help" | sed -n '/--kind K, one of:/,/^--since/{//!p}' | tr ', ' '\n\n' |
			grep -E '^[a-z_]+$'
		return ;;
	esac
	# the first argument after the command path
	local argn=0 j
	for ((j = i; j < n; j++)); do case ${_w[j - 1]} in -*) ;; *) argn=$((argn + 1)) ;; esac; done
	case "${cmdpath[*]}" in
	run | runs | "project head" | "project log" | "project contract" | "draft create" | \
		"draft list" | commit)
		[ $argn -eq 0 ] && _airlock_projects ;;
	review | apply | replay | "run show" | "bundle export")
		[ $argn -eq 0 ] && _airlock_ids ;;
	"snapshot show" | "snapshot export" | "snapshot diff")
		[ $argn -eq 0 ] || [ "${cmdpath[*]}" = "snapshot diff" ] && _airlock_projects ;;
	"admin grant") [ $argn -eq 1 ] && _airlock_projects ;;
	esac
}

