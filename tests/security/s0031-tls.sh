#!/bin/bash
# The daemon over TLS (issue 11, item 15): --tls-cert/--tls-key serve HTTPS
# with TLS 1.2+ only, the CLI trusts a given CA (--ca-cert, AIRLOCK_CA_CERT),
# and plain HTTP on an address other than loopback is refused unless
# --insecure.
. "$(dirname "$0")/../lib.sh"
need_userns
command -v openssl >/dev/null || skip_all "needs the openssl command"
"$AL" init >/dev/null
"$AL" project create p >/dev/null
"$AL" admin principal create adm --role admin >/dev/null
ADM=$("$AL" admin token create adm 2>/dev/null)
C="$T/tls"; mkdir -p "$C"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/key.pem" -out "$C/cert.pem" \
	-days 2 -subj /CN=localhost -addext "subjectAltName=IP:127.0.0.1,DNS:localhost" 2>/dev/null
chmod 600 "$C/key.pem"

# ---- refusals: nothing listens -----------------------------------------------------
run "$AL" serve --listen 0.0.0.0:0
is "$rc" 2 "plain HTTP on a non-loopback address is refused"
like "$err" "not a loopback address.*--tls-cert and --tls-key.*--insecure" "…saying why and what to give"
run "$AL" serve --listen 127.0.0.1:0 --tls-cert "$C/cert.pem"
is "$rc" 2 "--tls-cert without --tls-key: usage error"
chmod 644 "$C/key.pem"
run "$AL" serve --listen 127.0.0.1:0 --tls-cert "$C/cert.pem" --tls-key "$C/key.pem"
is "$rc" 6 "a private key readable by others is refused"
like "$err" "readable by others \\(mode 644\\): chmod 600" "…with the fix"
chmod 600 "$C/key.pem"
echo "not a certificate" > "$C/bad.pem"
run "$AL" serve --listen 127.0.0.1:0 --tls-cert "$C/bad.pem" --tls-key "$C/key.pem"
is "$rc" 6 "a file that is not PEM is refused"
openssl req -x509 -newkey ec -pkeyopt ec_paramgen_curve:P-256 -nodes -keyout "$C/other.pem" -out "$C/other-cert.pem" \
	-days 2 -subj /CN=other 2>/dev/null
chmod 600 "$C/other.pem"
run "$AL" serve --listen 127.0.0.1:0 --tls-cert "$C/other-cert.pem" --tls-key "$C/key.pem"
is "$rc" 1 "a certificate that is not the key's: refused at start"
like "$err" "cannot listen on 127.0.0.1:0 with TLS" "…saying so"

# ---- HTTPS ---------------------------------------------------------------------------
serve_start --tls-cert "$C/cert.pem" --tls-key "$C/key.pem"
like "$URL" "^https://127\\.0\\.0\\.1:[0-9]+$" "with a certificate the daemon serves https"
is "$(curl -s --cacert "$C/cert.pem" "$URL/api/health")" '{"status":"ok","version":"0.1.0"}' "…the API answers over TLS"
curl -s -o /dev/null "$URL/api/health"; is "$?" 60 "a client that does not trust the certificate fails verification"
code=$(curl -s -o /dev/null -w '%{http_code}' "${URL/https/http}/api/health")
is "$code" 000 "plain HTTP to the TLS port gets no answer"
s_client() { echo | openssl s_client -connect "${URL#https://}" "$@" 2>&1; }
like "$(s_client -tls1_2)" "New, TLSv1\\.2, Cipher is [A-Z]" "TLS 1.2 is accepted"
like "$(s_client -tls1_3)" "New, TLSv1\\.3, Cipher is [A-Z]" "TLS 1.3 is accepted"
like "$(s_client -tls1_1 -cipher 'DEFAULT@SECLEVEL=0')" "Cipher is \\(NONE\\)" "TLS 1.1 is refused by the server"
LOCAL=$("$AL" project list)
run env AIRLOCK_TOKEN="$ADM" "$AL" --server "$URL" --ca-cert "$C/cert.pem" project list
is "$rc:$out" "0:$LOCAL" "the CLI over https with --ca-cert prints what the local CLI prints"
run env AIRLOCK_TOKEN="$ADM" AIRLOCK_CA_CERT="$C/cert.pem" "$AL" --server "$URL" project list
is "$rc:$out" "0:$LOCAL" "…and with AIRLOCK_CA_CERT"
run env AIRLOCK_TOKEN="$ADM" "$AL" --server "$URL" project list
is "$rc" 1 "without the CA the CLI refuses the server"
like "$err" "certificate" "…saying it is the certificate"
ok "the request log holds no token" -- sh -c "! grep -qF '${ADM#alk_}' '$T/serve.log'"
serve_stop

# ---- non-loopback: with TLS, or --insecure ------------------------------------------------
serve_start --listen 0.0.0.0:0 --tls-cert "$C/cert.pem" --tls-key "$C/key.pem" 2>/dev/null || true
like "${URL:-}" "^https://0\\.0\\.0\\.0:" "a non-loopback address with TLS is served"
serve_stop
URL=
serve_start --listen 0.0.0.0:0 --insecure 2>/dev/null || true
like "${URL:-}" "^http://0\\.0\\.0\\.0:" "…and in plain HTTP only with --insecure"
serve_stop
done_testing
