#!/bin/bash
# The audit ledger: every action recorded with its effect, tamper-evident,
# verifiable offline with only the public key.
. "$(dirname "$0")/../lib.sh"
REF="$(dirname "$0")/../golden/ledger_ref.py"
"$AL" init >/dev/null
P="$T/p"; mkdir -p "$P" && echo a > "$P/a.txt"
B=$("$AL" project create fin --from "$P")
rm -rf "$T/w"; cp -a "$P" "$T/w"; echo draft > "$T/w/a.txt"; echo new > "$T/w/new.txt"
D=$("$AL" draft create fin --from "$T/w")
"$AL" apply "$D" --accept a.txt new.txt >/dev/null
echo other > "$T/w/other.txt"   # a draft with no change would make no content commit
D2=$("$AL" draft create fin --from "$T/w")
"$AL" apply "$D2" --reject-all >/dev/null
rm -rf "$T/w2"; cp -a "$P" "$T/w2"; echo mine > "$T/w2/a.txt"
"$AL" commit fin "$T/w2" --base "$B" >/dev/null 2>&1            # refused: strict
"$AL" commit fin "$T/w2" --base "$B" --strategy conflict_copy >/dev/null 2>&1

run "$AL" audit
is "$rc" 0 "audit lists the ledger"
kinds=$(echo "$out" | awk '{print $3}' | tr '\n' ' ')
is "$kinds" "project_create draft_create commit apply draft_create commit reject conflict commit conflict " \
	"every action has its entry: create, drafts, apply, reject, the refused commit, the conflict_copy commit and its conflict"
g=$("$AL" draft list --json fin | python3 -c 'import json,sys; print([d for d in json.load(sys.stdin)][0]["id"])')
run "$AL" audit --kind apply --json
like "$out" "\"draft\":\"$D\"" "an apply entry names its draft"
like "$out" '"mode":"accept_selected",.*"paths":\["a.txt","new.txt"\]' "  its mode and selected paths"
grp=$(echo "$out" | grep -o '"group":"g[0-9a-f]*"' | head -1 | cut -d'"' -f4)
run "$AL" audit --group "$grp"
is "$(echo "$out" | awk '{print $3}' | tr '\n' ' ')" "draft_create commit apply " "the draft, its content and its apply share one group id"
run "$AL" audit --kind conflict --json
like "$out" '"outcome":"refused"' "a refused commit is recorded as a conflict"
like "$out" '"outcome":"copied","path":"a.txt","theirs":\{' "a conflict_copy conflict is recorded structurally"
run "$AL" audit --project nope
is "$out" "" "filters by project"
run "$AL" audit --since 2001-01-01 --kind reject
is "$(echo "$out" | wc -l)" 1 "filters by kind and time"

run "$AL" audit verify
is "$rc" 0 "the live ledger verifies"
"$AL" audit pubkey > "$T/pub.pem"
ok "the public key is PEM Ed25519" -- openssl pkey -pubin -in "$T/pub.pem" -noout
"$AL" audit checkpoint > "$T/saved.cp"
run "$AL" audit export "$T/x.ledger"
is "$rc" 0 "export"
run "$AL" audit verify "$T/x.ledger" --key "$T/pub.pem"
like "$out" "^ok: 10 entries from 0, [0-9]+ checkpoints" "the export verifies offline with only the public key"
run "$AL" audit verify "$T/x.ledger"
like "$out" "warning: signatures checked with the key inside the export" "without --key, it says whose key it used"

n=$(python3 "$REF" roots "$T/x.ledger")
ok "an independent implementation agrees with every checkpoint root ($n)" -- test "$n" -gt 3
for ij in "0 10" "3 10" "9 10" "4 7"; do
	set -- $ij
	"$AL" audit checkpoint >/dev/null
	mine=$("$AL" audit prove --json "$1" | python3 -c 'import json,sys; print(" ".join(json.load(sys.stdin)["proof"]))')
	is "$mine" "$(python3 "$REF" path "$T/x.ledger" "$1" 10)" "inclusion proof of entry $1 in 10 matches the reference"
done
for mn in "1..10" "4..10" "5..8" "7..9"; do
	m=${mn%..*}; nn=${mn#*..}
	mine=$("$AL" audit prove --json "$mn" | python3 -c 'import json,sys; d=json.load(sys.stdin); assert d["valid"]; print(" ".join(d["proof"]))')
	is "$mine" "$(python3 "$REF" proof "$T/x.ledger" "$m" "$nn")" "consistency proof $mn matches the reference (and verifies)"
done

# tampering with the export
bad() { # bad DESCRIPTION PATTERN -- edit command on $T/t.ledger
	local desc=$1 pat=$2; shift 3
	cp "$T/x.ledger" "$T/t.ledger"; "$@"
	run "$AL" audit verify "$T/t.ledger" --key "$T/pub.pem"
	is "$rc" 4 "$desc is detected (exit 4)"
	like "$err" "$pat" "  and named: $pat"
}
bad "a changed byte in an entry" "checkpoint [0-9]+: the entries [0-9]+\.\.[0-9]+ do not hash" -- sed -i '0,/"actor":"root"/s//"actor":"roox"/' "$T/t.ledger"
bad "a deleted entry" "entry 3 is missing" -- sed -i '0,/"seq":3,/{/"seq":3,/d}' "$T/t.ledger"
bad "two entries swapped" "expected entry 1, found entry 2" -- python3 -c "
import sys; L=open('$T/t.ledger').read().split('\n'); e=[i for i,l in enumerate(L) if l.startswith('E ')]
L[e[1]],L[e[2]]=L[e[2]],L[e[1]]; open('$T/t.ledger','w').write('\n'.join(L))"
bad "a changed checkpoint root" "do not hash to its root" -- python3 -c "
L=open('$T/t.ledger').read().split('\n'); i=[i for i,l in enumerate(L) if l.startswith('C ')][0]
p=L[i].split(); p[2]=('e' if p[2][0]=='f' else 'f')+p[2][1:]; L[i]=' '.join(p); open('$T/t.ledger','w').write('\n'.join(L))"
bad "a changed checkpoint signature" "bad signature" -- python3 -c "
L=open('$T/t.ledger').read().split('\n'); i=[i for i,l in enumerate(L) if l.startswith('C ')][-1]
p=L[i].split(); p[4]=('0' if p[4][0]!='0' else '1')+p[4][1:]; L[i]=' '.join(p); open('$T/t.ledger','w').write('\n'.join(L))"
bad "an entry appended without a checkpoint" "not covered by a signed checkpoint|found entry" -- python3 -c "
L=open('$T/t.ledger').read().rstrip('\n').split('\n'); e=[l for l in L if l.startswith('E ')][-1]
L.insert(len(L)-1, e.replace('\"seq\":9,','\"seq\":10,')); L[-1]='end 11'; open('$T/t.ledger','w').write('\n'.join(L)+'\n')"
bad "a truncated export" "truncated" -- sed -i '$d' "$T/t.ledger"
bad "a second public key half-way (a key switch)" "a second public key" -- sed -i '0,/^C /s//pubkey 00000000000000000000000000000000000000000000000000000000000000aa\nC /' "$T/t.ledger"

# a checkpoint forged with another key
openssl genpkey -algorithm ed25519 -out "$T/other.pem" 2>/dev/null
python3 "$REF" resign "$T/x.ledger" "$T/other.pem" "$T/forged.ledger"
run "$AL" audit verify "$T/forged.ledger" --key "$T/pub.pem"
is "$rc" 4 "checkpoints signed with another key are refused"
like "$err" "bad signature" "  as a bad signature"
openssl pkey -in "$T/other.pem" -pubout -out "$T/other.pub" 2>/dev/null
run "$AL" audit verify "$T/x.ledger" --key "$T/other.pub"
is "$rc" 4 "the genuine export does not verify under the wrong key"

# history rewritten and re-signed with the real key: only a saved checkpoint catches it
sed '0,/"actor":"root"/s//"actor":"eve"/' "$T/x.ledger" > "$T/rw0.ledger"
python3 "$REF" resign "$T/rw0.ledger" "$AIRLOCK_HOME/ledger.key" "$T/rewritten.ledger"
run "$AL" audit verify "$T/rewritten.ledger" --key "$T/pub.pem"
is "$rc" 0 "a history re-signed with the stolen key verifies on its own"
run "$AL" audit verify "$T/rewritten.ledger" --key "$T/pub.pem" --trusted-checkpoint "$T/saved.cp"
is "$rc" 4 "but not against the checkpoint the auditor saved"
like "$err" "not consistent with the trusted checkpoint" "  and says so"
echo more > "$T/w2/more"; "$AL" commit fin "$T/w2" --base "$("$AL" project head fin)" --strategy rebase_if_disjoint >/dev/null 2>&1
run "$AL" audit verify --trusted-checkpoint "$T/saved.cp"
is "$rc" 0 "the grown live ledger is consistent with the saved checkpoint"
CP=$(cut -d' ' -f2 "$T/saved.cp")
run "$AL" audit export "$T/since.ledger" --since-checkpoint "$T/saved.cp"
run "$AL" audit verify "$T/since.ledger" --key "$T/pub.pem"
like "$out" "^ok: [0-9]+ entries from $CP," "an export since a checkpoint verifies on its own"

# tampering with the live store
TD="$AIRLOCK_HOME/tenants/default"
# the WAL stays beside the database (docs/operations.md): fold it in first
python3 -c "import sqlite3; sqlite3.connect('$TD/meta.db').execute('PRAGMA wal_checkpoint(TRUNCATE)')"
cp "$TD/meta.db" "$T/meta.bak"
python3 -c "
import sqlite3; db=sqlite3.connect('$TD/meta.db')
e=db.execute('select entry from ledger where seq=2').fetchone()[0]
db.execute('update ledger set entry=? where seq=2', (e.replace(b'root', b'r00t'),)); db.commit()"
run "$AL" audit verify
is "$rc" 4 "a changed stored entry fails the live verify"
cp "$T/meta.bak" "$TD/meta.db"; rm -f "$TD/meta.db-wal" "$TD/meta.db-shm"
python3 -c "
import sqlite3; db=sqlite3.connect('$TD/meta.db'); db.execute('delete from ledger where seq=5'); db.commit()"
run "$AL" audit verify
is "$rc" 4 "a deleted stored entry fails the live verify"
like "$err" "expected entry 5, found entry 6" "  naming the gap"
cp "$T/meta.bak" "$TD/meta.db"; rm -f "$TD/meta.db-wal" "$TD/meta.db-shm"
run "$AL" audit verify
is "$rc" 0 "restored, it verifies again"

# an entry is written with its effect, or neither is
head=$("$AL" project head fin); entries=$("$AL" audit | wc -l)
python3 -c "
import sqlite3; db=sqlite3.connect('$TD/meta.db')
db.execute(\"create trigger fail_ledger before insert on ledger begin select raise(abort, 'injected ledger failure'); end\"); db.commit()"
echo x > "$T/w2/x"
run "$AL" commit fin "$T/w2" --base "$head" --strategy rebase_if_disjoint
is "$rc" 1 "when the entry cannot be written the commit fails"
is "$("$AL" project head fin):$("$AL" audit | wc -l)" "$head:$entries" "  and the head did not move (no effect without its entry)"
python3 -c "
import sqlite3; db=sqlite3.connect('$TD/meta.db'); db.execute('drop trigger fail_ledger')
db.execute(\"create trigger fail_effect before update on volumes begin select raise(abort, 'injected effect failure'); end\"); db.commit()"
run "$AL" commit fin "$T/w2" --base "$head" --strategy rebase_if_disjoint
is "$rc" 1 "when the effect fails after its entry was prepared"
is "$("$AL" project head fin):$("$AL" audit | wc -l)" "$head:$entries" "  no entry remains (no entry without its effect)"
python3 -c "
import sqlite3; db=sqlite3.connect('$TD/meta.db'); db.execute('drop trigger fail_effect'); db.commit()"

# kill -9 during appends leaves a verifiable ledger
for i in $(seq 1 25); do
	echo "$i" > "$T/w2/k$i"
	"$AL" commit fin "$T/w2" --base "$("$AL" project head fin)" --strategy rebase_if_disjoint >/dev/null 2>&1 &
	pid=$!; sleep "0.0$(printf '%02d' $((RANDOM % 15)))"; kill -9 "$pid" 2>/dev/null; wait "$pid" 2>/dev/null
done 2>/dev/null
run "$AL" audit verify
is "$rc" 0 "after 25 kill -9 during commits the ledger verifies"
done_testing
