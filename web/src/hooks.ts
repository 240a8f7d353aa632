import { useEffect, useState } from "preact/hooks";
import { api } from "./api";

export type Loaded<T> = { data: T | null; error: unknown; loading: boolean; reload: () => void };

// GET a path (null: nothing yet); reloads when the path changes or on reload()
export function useGet<T>(path: string | null): Loaded<T> {
	const [tick, setTick] = useState(0);
	const [state, setState] = useState<{ data: T | null; error: unknown; loading: boolean }>({ data: null, error: null, loading: !!path });
	useEffect(() => {
		if (!path)
			return;
		let live = true;
		setState((s) => ({ ...s, loading: true }));
		api<T>("GET", path).then(
			(data) => live && setState({ data, error: null, loading: false }),
			(error) => live && setState({ data: null, error, loading: false }),
		);
		return () => {
			live = false;
		};
	}, [path, tick]);
	return { ...state, reload: () => setTick((t) => t + 1) };
}
