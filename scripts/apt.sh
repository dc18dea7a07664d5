# Sourced by setup.sh and setup-test.sh: install the Debian packages of a set that are missing, as
# root; otherwise print the exact apt-get line to run and fail.
# `need_packages LABEL PACKAGE...`; TILEBAKE_APT_NO_SERVICES=1 keeps Debian's maintainer scripts from
# starting the packages' system services (the tests start their own instances and stop them by PID).
need_packages() {
  local label=$1; shift
  local missing=() p
  for p in "$@"; do
    dpkg-query -W -f='${Status}' "$p" 2>/dev/null | grep -q "install ok installed" || missing+=("$p")
  done
  [ ${#missing[@]} -eq 0 ] && return 0
  local cmd="apt-get update && DEBIAN_FRONTEND=noninteractive apt-get install -y --no-install-recommends ${missing[*]}"
  if [ "$(id -u)" != 0 ]; then
    echo "$label: missing Debian packages: ${missing[*]}. Run as root:"
    echo "  sudo sh -c '$cmd'"
    return 1
  fi
  echo "$label: installing Debian packages: ${missing[*]}"
  local guard=""
  if [ "${TILEBAKE_APT_NO_SERVICES:-}" = 1 ] && [ ! -e /usr/sbin/policy-rc.d ]; then
    # Debian's convention: exit code 101 from policy-rc.d means "do not start services now".
    guard=/usr/sbin/policy-rc.d
    printf '#!/bin/sh\nexit 101\n' >"$guard" && chmod +x "$guard"
  fi
  local status=0
  bash -c "$cmd" >/tmp/tilebake-apt.log 2>&1 || status=$?
  [ -n "$guard" ] && rm -f "$guard"
  if [ $status -ne 0 ]; then
    tail -30 /tmp/tilebake-apt.log
    echo "$label: apt-get failed (log: /tmp/tilebake-apt.log)"
    return 1
  fi
}
