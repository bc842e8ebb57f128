import { useEffect, useRef, useState, type ReactNode } from "react";

type Props = { src: string; size: number; className: string; fallback: ReactNode };

/**
 * A logo from elsewhere (the operator's, an app's: docs/decisions/0018) that gives way to our own mark when it does
 * not load (issue 28, item 21: a broken-image icon stood in the header and on the consent screen). With JavaScript
 * the fallback replaces it, also when the image failed before the page was hydrated (its `complete` with no size
 * says so). Without JavaScript, `alt=""` keeps browsers from drawing the broken-image icon: the place stays empty.
 * Decorative either way: the name stands beside it.
 */
export function LogoImage({ src, size, className, fallback }: Props) {
  const [failed, setFailed] = useState(false);
  const image = useRef<HTMLImageElement>(null);
  useEffect(() => {
    const element = image.current;
    if (element?.complete && element.naturalWidth === 0) setFailed(true);
  }, []);
  if (failed) return <>{fallback}</>;
  return <img ref={image} src={src} alt="" width={size} height={size} referrerPolicy="no-referrer" onError={() => setFailed(true)} className={className} />;
}
