#!/usr/bin/env bash
# Starts the mail and file servers the connectors' suites talk to, on test ports, when they are
# down: Dovecot (IMAP 10143 with STARTTLS, LMTP 10024), an SMTP relay (2525, test/servers/smtp-relay.ts:
# AUTH and STARTTLS, delivering every mail to Dovecot over LMTP) and OpenSSH's sshd (2222, SFTP)
# with a throwaway host key and user. Idempotent: what answers already is left alone.
# Installs Debian's dovecot-imapd, dovecot-lmtpd and openssh-server when missing (root or sudo).
# Everything lives under $SVC_TEST_SERVERS (default /tmp/svc-test-servers); the suites read
# the credentials and keys there (test/helpers/servers.ts).
set -uo pipefail
cd "$(dirname "$0")/.."
dir=${SVC_TEST_SERVERS:-/tmp/svc-test-servers}
mkdir -p "$dir"
sudo_=""; [ "$(id -u)" -ne 0 ] && sudo_="sudo"
port_open() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }
wait_port() { local i; for i in $(seq 1 "${2:-30}"); do port_open "$1" && return 0; sleep 0.5; done; return 1; }
failed=0

if [ ! -x /usr/sbin/dovecot ] || [ ! -x /usr/sbin/sshd ] || [ ! -e /usr/lib/dovecot/lmtp ]; then
  ($sudo_ apt-get update -qq && DEBIAN_FRONTEND=noninteractive $sudo_ apt-get install -y -qq dovecot-imapd dovecot-lmtpd openssh-server openssh-sftp-server) >"$dir/apt.log" 2>&1 \
    || { echo "test-servers: could not install dovecot/openssh-server (see $dir/apt.log)"; failed=1; }
fi

# A self-signed certificate for STARTTLS on IMAP and SMTP.
if [ ! -s "$dir/tls.key" ]; then
  openssl req -x509 -newkey rsa:2048 -nodes -days 3650 -subj "/CN=localhost" -addext "subjectAltName=DNS:localhost,IP:127.0.0.1" \
    -keyout "$dir/tls.key" -out "$dir/tls.crt" >/dev/null 2>&1 || { echo "test-servers: openssl failed"; failed=1; }
fi

# Dovecot: any user name logs in with the password svc-test (each suite uses names of its own),
# mail in $dir/mail/<user>/Maildir owned by the svcmail system user.
if ! port_open 10143 && [ -x /usr/sbin/dovecot ]; then
  id svcmail >/dev/null 2>&1 || $sudo_ useradd --system --no-create-home --shell /usr/sbin/nologin svcmail
  mkdir -p "$dir/mail" "$dir/dovecot-run" "$dir/dovecot-state"
  $sudo_ chown svcmail:svcmail "$dir/mail"
  uid=$(id -u svcmail); gid=$(id -g svcmail)
  cat >"$dir/dovecot.conf" <<EOF
protocols = imap lmtp
listen = 127.0.0.1
base_dir = $dir/dovecot-run
state_dir = $dir/dovecot-state
log_path = $dir/dovecot.log
info_log_path = $dir/dovecot.log
ssl = yes
ssl_cert = <$dir/tls.crt
ssl_key = <$dir/tls.key
disable_plaintext_auth = no
auth_mechanisms = plain login
mail_location = maildir:~/Maildir
first_valid_uid = 1
first_valid_gid = 1
passdb {
  driver = static
  args = password=svc-test
}
userdb {
  driver = static
  args = uid=$uid gid=$gid home=$dir/mail/%u allow_all_users=yes
}
namespace inbox {
  inbox = yes
  separator = /
}
service imap-login {
  inet_listener imap {
    address = 127.0.0.1
    port = 10143
  }
  inet_listener imaps {
    port = 0
  }
  process_min_avail = 1
}
service lmtp {
  inet_listener lmtp {
    address = 127.0.0.1
    port = 10024
  }
}
protocol lmtp {
  postmaster_address = postmaster@localhost
}
lmtp_save_to_detail_mailbox = no
mail_max_userip_connections = 500
EOF
  $sudo_ /usr/sbin/dovecot -c "$dir/dovecot.conf" || true
  wait_port 10143 20 || { echo "test-servers: Dovecot did not start (see $dir/dovecot.log)"; failed=1; }
fi

# The SMTP relay: a Node SMTP server (smtp-server) handing each mail to Dovecot's LMTP.
if ! port_open 2525; then
  if [ -d node_modules/smtp-server ]; then
    SVC_TEST_SERVERS=$dir nohup node --import tsx test/servers/smtp-relay.ts >"$dir/smtp-relay.log" 2>&1 &
    wait_port 2525 40 || { echo "test-servers: the SMTP relay did not start (see $dir/smtp-relay.log)"; failed=1; }
  else
    echo "test-servers: node_modules/smtp-server missing (npm ci first); no SMTP relay"; failed=1
  fi
fi

# sshd: user svcsftp (password svc-test, or the key $dir/client_key), SFTP only, files under
# $dir/sftp/home; a host key of its own ($dir/ssh_host_ed25519_key).
if ! port_open 2222 && [ -x /usr/sbin/sshd ]; then
  id svcsftp >/dev/null 2>&1 || $sudo_ useradd --create-home --home-dir "$dir/sftp-home" --shell /bin/sh svcsftp
  echo 'svcsftp:svc-test' | $sudo_ chpasswd
  [ -s "$dir/ssh_host_ed25519_key" ] || ssh-keygen -q -t ed25519 -N '' -f "$dir/ssh_host_ed25519_key"
  [ -s "$dir/client_key" ] || ssh-keygen -q -t ed25519 -N '' -C svc-test -f "$dir/client_key"
  home=$(getent passwd svcsftp | cut -d: -f6)
  $sudo_ mkdir -p "$home"
  cp "$dir/client_key.pub" "$dir/authorized_keys"
  chmod 644 "$dir/authorized_keys" "$dir/client_key.pub"
  chmod 600 "$dir/client_key"
  $sudo_ chown svcsftp: "$home"
  $sudo_ mkdir -p /run/sshd
  cat >"$dir/sshd_config" <<EOF
Port 2222
ListenAddress 127.0.0.1
HostKey $dir/ssh_host_ed25519_key
PidFile $dir/sshd.pid
AuthorizedKeysFile $dir/authorized_keys
PasswordAuthentication yes
KbdInteractiveAuthentication no
PubkeyAuthentication yes
PermitRootLogin no
StrictModes no
UsePAM no
AllowUsers svcsftp
MaxStartups 100:30:200
MaxSessions 100
Subsystem sftp internal-sftp
ForceCommand internal-sftp
EOF
  $sudo_ /usr/sbin/sshd -f "$dir/sshd_config" -E "$dir/sshd.log" || true
  wait_port 2222 20 || { echo "test-servers: sshd did not start (see $dir/sshd.log)"; failed=1; }
fi

exit $failed
