# What is the box? Run by `nasprobe deploy` over ssh (sh -s): one fact per line.
uname -m
id -u
[ -f /etc/synoinfo.conf ] && echo has_synology
[ -d /mnt/HD/HD_a2 ] && [ -d /usr/local/config ] && echo has_wd
[ -d /run/systemd/system ] && command -v systemctl >/dev/null 2>&1 && echo has_systemd
command -v sha256sum >/dev/null 2>&1 && echo has_sha256sum
command -v scp >/dev/null 2>&1 && echo has_scp
command -v sudo >/dev/null 2>&1 && echo has_sudo
true
