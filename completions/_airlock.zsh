# zsh completion for airlock (make install: PREFIX/share/zsh/site-functions/_airlock)
_airlock() {
	local -a c
	c=("${(@f)$(_airlock_candidates "${(@)words[2,CURRENT]}")}")
	c=(${c:#})
	if (( ${#c} )); then
		compadd -a c
	else
		_files
	fi
}
if [ "${funcstack[1]-}" = _airlock ]; then
	_airlock "$@"
else
	compdef _airlock airlock
fi
