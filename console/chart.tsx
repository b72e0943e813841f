import { useEffect, useRef } from "preact/hooks";
import uPlot from "uplot";

/** Series of counts over time, drawn by uPlot: `times` in seconds, one array of counts per series. */
export function CountChart(props: { title: string; times: number[]; series: { label: string; color: string; counts: number[] }[] }) {
  const host = useRef<HTMLDivElement>(null);
  useEffect(() => {
    const element = host.current!;
    const plot = new uPlot(
      {
        title: props.title,
        width: Math.max(320, Math.min(element.clientWidth || 800, 960)),
        height: 260,
        scales: { y: { range: (_, __, max) => [0, Math.max(1, max)] } },
        series: [{}, ...props.series.map((series) => ({ label: series.label, stroke: series.color, width: 2, points: { show: false } }))],
        axes: [{}, { label: "requests" }],
      },
      [props.times, ...props.series.map((series) => series.counts)],
      element,
    );
    return () => plot.destroy();
  }, [props.times, props.series]);
  return <div class="chart" ref={host} role="img" aria-label={`${props.title}: chart; the same counts are in the table below`} />;
}
