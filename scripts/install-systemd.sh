#!/usr/bin/env bash
# Install the Dory daemon (`dory ops watch`) as a systemd *user* service.
#
# Usage: scripts/install-systemd.sh CORPUS_DIR [--http] [--dory PATH] [--unit-dir DIR] [--no-enable]
#
#   CORPUS_DIR      the corpus the daemon watches (must exist)
#   --http          install dory-http.service (`dory serve`: the daemon plus HTTP) instead
#   --dory PATH     the `dory` executable to run (default: `command -v dory`)
#   --unit-dir DIR  where to write the unit
#                   (default: ${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user)
#   --no-enable     only write the files; do not run systemctl
#
# Writes $HOME/.config/dory/watch.env (DORY_CORPUS=<absolute path>; the unit reads it from
# %h/.config/dory/watch.env, and EnvironmentFile does not expand %h, so the path is absolute)
# and the rendered unit, then runs `systemctl --user daemon-reload` and
# `systemctl --user enable --now dory-watch.service`.
set -euo pipefail

UNIT_NAME=dory-watch.service
SCRIPT_DIR=$(cd -- "$(dirname -- "${BASH_SOURCE[0]}")" && pwd -P)

usage() {
    sed -n '4,12s/^# \{0,1\}//p' "${BASH_SOURCE[0]}"
}

die() {  # die CODE MESSAGE...
    local code=$1
    shift
    printf 'install-systemd: error: %s\n' "$*" >&2
    exit "$code"
}

corpus_arg=""
dory_arg=""
unit_dir=""
enable=1

while (($# > 0)); do
    case $1 in
        -h | --help) usage; exit 0 ;;
        --http) UNIT_NAME=dory-http.service; shift ;;
        --dory) (($# >= 2)) || die 2 "--dory needs a PATH"; dory_arg=$2; shift 2 ;;
        --dory=*) dory_arg=${1#--dory=}; shift ;;
        --unit-dir) (($# >= 2)) || die 2 "--unit-dir needs a DIR"; unit_dir=$2; shift 2 ;;
        --unit-dir=*) unit_dir=${1#--unit-dir=}; shift ;;
        --no-enable) enable=0; shift ;;
        --) shift; (($# == 1)) && [[ -z $corpus_arg ]] || { usage >&2; exit 2; }; corpus_arg=$1; shift ;;
        -*) usage >&2; die 2 "unknown option: $1" ;;
        *)
            [[ -z $corpus_arg ]] || die 2 "only one CORPUS_DIR may be given (got '$corpus_arg' and '$1')"
            corpus_arg=$1
            shift
            ;;
    esac
done

TEMPLATE="$SCRIPT_DIR/../systemd/$UNIT_NAME"
[[ -n $corpus_arg ]] || { usage >&2; die 2 "missing CORPUS_DIR"; }
[[ -n ${HOME:-} ]] || die 2 "HOME is not set"
[[ -f $TEMPLATE ]] || die 1 "unit template not found: $TEMPLATE"

# --- the corpus: an existing directory, made absolute --------------------------------------
[[ -d $corpus_arg ]] || die 2 "corpus directory does not exist: $corpus_arg (create one with: dory init DIR)"
corpus=$(cd -- "$corpus_arg" && pwd -P)
case $corpus in
    *$'\n'* | *"'"*) die 2 "corpus path contains a newline or a single quote, which watch.env cannot hold: $corpus" ;;
esac

# --- the dory executable: absolute, since user units do not see the shell's PATH -----------
if [[ -n $dory_arg ]]; then
    dory=$dory_arg
else
    dory=$(command -v dory || true)
    [[ -n $dory ]] || die 2 "dory not found on PATH; pass --dory /path/to/dory (e.g. your venv's bin/dory)"
fi
[[ -f $dory && -x $dory ]] || die 2 "dory executable not found or not executable: $dory"
if [[ $dory != /* ]]; then
    dory="$(cd -- "$(dirname -- "$dory")" && pwd -P)/$(basename -- "$dory")"
fi
case $dory in
    *$'\n'* | *'"'* | *'\'*) die 2 "dory path contains a newline, quote or backslash, which ExecStart cannot hold: $dory" ;;
esac

# --- render -------------------------------------------------------------------------------
env_dir="$HOME/.config/dory"
env_file="$env_dir/watch.env"
unit_dir=${unit_dir:-${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user}
unit_path="$unit_dir/$UNIT_NAME"

# ExecStart: '%' starts a specifier in unit files, so double it; quote paths with spaces.
exec_path=${dory//%/%%}
[[ $exec_path != *[[:space:]]* ]] || exec_path="\"$exec_path\""
# Escape what is special on sed's replacement side (\, & and the | delimiter).
sed_repl=$(printf '%s' "$exec_path" | sed -e 's/[\\&|]/\\&/g')

# Plain value when it is safe unquoted; single quotes (no escapes inside) otherwise.
if [[ $corpus =~ ^[A-Za-z0-9/._+,@:=-]+$ ]]; then
    env_value=$corpus
else
    env_value="'$corpus'"
fi

mkdir -p -- "$env_dir" "$unit_dir"

tmp_env="$env_file.tmp.$$"
tmp_unit="$unit_path.tmp.$$"
trap 'rm -f -- "$tmp_env" "$tmp_unit"' EXIT

{
    echo "# Written by scripts/install-systemd.sh; read by $UNIT_NAME (EnvironmentFile=)."
    echo "# systemd does not expand %h or ~ here: keep the path absolute."
    echo "DORY_CORPUS=$env_value"
} >"$tmp_env"
mv -f -- "$tmp_env" "$env_file"

sed -e "s|@DORY_BIN@|$sed_repl|g" "$TEMPLATE" >"$tmp_unit"
if grep -q '@DORY_BIN@' "$tmp_unit"; then
    die 1 "rendering left an @DORY_BIN@ placeholder in $tmp_unit"
fi
chmod 644 "$tmp_unit"
mv -f -- "$tmp_unit" "$unit_path"

echo "Installed:"
echo "  environment  $env_file  (DORY_CORPUS=$corpus)"
echo "  unit         $unit_path  (ExecStart=$(sed -n 's/^ExecStart=//p' "$unit_path"))"

later() {
    echo "To enable it later, from a login session with a user systemd manager:"
    echo "  systemctl --user daemon-reload"
    echo "  systemctl --user enable --now $UNIT_NAME"
    echo "To keep it running while you are logged out: loginctl enable-linger \"\$USER\""
}

if ((enable == 0)); then
    echo "Not enabled (--no-enable)."
    later
    exit 0
fi

if ! command -v systemctl >/dev/null 2>&1; then
    echo "systemctl not found: files are written but the service is not enabled." >&2
    later
    exit 0
fi

if ! systemctl --user daemon-reload; then
    echo "No systemd user session reachable (systemctl --user failed): files are written but the service is not enabled." >&2
    later
    exit 0
fi

if [[ $unit_dir != "${XDG_CONFIG_HOME:-$HOME/.config}/systemd/user" ]]; then
    echo "note: $unit_dir is not the default user unit directory; systemd may not find $UNIT_NAME there." >&2
fi

systemctl --user enable --now "$UNIT_NAME" ||
    die 1 "systemctl --user enable --now $UNIT_NAME failed; see: journalctl --user -u $UNIT_NAME"

echo "Enabled and started $UNIT_NAME."
echo "  status  systemctl --user status $UNIT_NAME"
echo "  logs    journalctl --user -u $UNIT_NAME -f"
