/** A duration as `H:MM:SS.ffffff` (hours are not capped at 24; negative when pub_time is ahead of us). */
export function formatDuration(ms: number): string {
  const sign = ms < 0 ? '-' : '';
  const micros = Math.round(Math.abs(ms) * 1000);
  const totalSeconds = Math.floor(micros / 1_000_000);
  const h = Math.floor(totalSeconds / 3600);
  const m = Math.floor((totalSeconds % 3600) / 60);
  const s = totalSeconds % 60;
  const frac = micros % 1_000_000;
  return `${sign}${h}:${String(m).padStart(2, '0')}:${String(s).padStart(2, '0')}.${String(frac).padStart(6, '0')}`;
}
