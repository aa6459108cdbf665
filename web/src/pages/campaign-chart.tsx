import { useEffect, useRef } from 'react';
import uPlot from 'uplot';
import 'uplot/dist/uPlot.min.css';
import type { Sample } from './campaigns';

/**
 * Sent, opened and clicked over time, from the stats samples the campaign page took while it
 * watched. Loaded on its own (React.lazy) so uPlot stays out of the initial JavaScript.
 */
export default function CampaignChart({ samples }: { samples: Sample[] }) {
  const box = useRef<HTMLDivElement>(null);
  const plot = useRef<uPlot | null>(null);
  const data: uPlot.AlignedData = [
    samples.map((s) => s.at),
    samples.map((s) => s.sent),
    samples.map((s) => s.opened),
    samples.map((s) => s.clicked),
  ];

  useEffect(() => {
    const el = box.current;
    if (!el) return;
    const width = () => Math.max(240, el.clientWidth);
    // The page's colours (light or dark scheme), so axes and lines stay readable in both.
    const css = getComputedStyle(document.documentElement);
    const color = (name: string) => css.getPropertyValue(name).trim();
    const axis = { stroke: color('--fg'), grid: { stroke: color('--line') } };
    plot.current = new uPlot(
      {
        width: width(),
        height: 240,
        series: [
          {},
          { label: 'Sent', stroke: color('--accent'), width: 2 },
          { label: 'Opened', stroke: color('--ok'), width: 2 },
          { label: 'Clicked', stroke: color('--warn'), width: 2 },
        ],
        axes: [axis, { ...axis, label: 'Emails' }],
      },
      data,
      el,
    );
    const resize = () => plot.current?.setSize({ width: width(), height: 240 });
    window.addEventListener('resize', resize);
    return () => {
      window.removeEventListener('resize', resize);
      plot.current?.destroy();
      plot.current = null;
    };
  }, []);

  useEffect(() => {
    plot.current?.setData(data);
  }, [samples]);

  const last = samples[samples.length - 1];
  return (
    <figure className="chart">
      <div ref={box} aria-hidden="true" />
      <p className="visually-hidden">
        Now {last.sent} sent, {last.opened} opened, {last.clicked} clicked.
      </p>
      <figcaption className="muted">Sent, opened and clicked while this page was open</figcaption>
    </figure>
  );
}
