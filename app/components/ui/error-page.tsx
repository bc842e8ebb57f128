export function ErrorPage({ status, title, message }: { status: number; title: string; message: string }) {
  return (
    <main className="mx-auto flex min-h-screen max-w-xl flex-col justify-center gap-4 p-6">
      <p className="text-sm font-medium text-slate-500 dark:text-slate-400">Error {status}</p>
      <h1 className="text-2xl font-semibold">{title}</h1>
      <p className="text-slate-700 dark:text-slate-300">{message}</p>
      <p>
        <a className="text-blue-700 underline dark:text-blue-400" href="/">
          Go to the start page
        </a>
      </p>
    </main>
  );
}
