# bash completion for airlock (make install: PREFIX/share/bash-completion/completions/airlock)
_airlock() {
	local cur=${COMP_WORDS[COMP_CWORD]} IFS=$'\n'
	local c
	c=$(_airlock_candidates "${COMP_WORDS[@]:1:COMP_CWORD}")
	COMPREPLY=($(compgen -W "$c" -- "$cur"))
	# a directory or file where nothing else fits (DIR, FILE, PATH...)
	if [ ${#COMPREPLY[@]} -eq 0 ] && [[ $cur != -* ]]; then
		COMPREPLY=($(compgen -f -- "$cur"))
		compopt -o filenames 2>/dev/null
	fi
}
complete -F _airlock airlock
