import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';

/**
 * Events per minute as a small uPlot line. Loaded on its own (React.lazy from the Overview), so
 * uPlot stays out of the initial JavaScript.
 */
export default function EventsChart({ points }: { points: { minute: string; count: number }[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const accent = getComputedStyle(el).getPropertyValue('color') || '#0b5cad';
    plot.current = new uPlot(
      {
        width: Math.max(el.clientWidth, 200),
        height: 160,
        legend: { show: false },
        cursor: { show: false },
        scales: { x: { time: true }, y: { range: (_u, _min, max) => [0, Math.max(max, 1)] } },
        axes: [{ stroke: accent }, { stroke: accent, size: 40 }],
        series: [
          {},
          { label: 'Events', stroke: accent, width: 2, fill: 'rgba(11, 92, 173, 0.12)' },
        ],
      },
      [[], []],
      el,
    );
    const resize = () =>
      plot.current?.setSize({ width: Math.max(el.clientWidth, 200), height: 160 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData([
      points.map((p) => Date.parse(p.minute) / 1000),
      points.map((p) => p.count),
    ]);
  }, [points]);

  return <div ref={box} className="chart" aria-hidden="true" />;
}
